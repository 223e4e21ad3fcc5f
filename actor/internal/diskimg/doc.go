// Package diskimg gives a directory a size limit by mounting a file-backed ext4 image
// on it: the workspace disk quota on kernels without filesystem quotas.
//
// # Entry points
//
// [Supported] says whether this machine can do it (root, loop devices, mkfs.ext4).
// [Create] makes a sparse image of a given size; [Attach] attaches it to a free loop
// device and mounts it on a directory, and [Mount.Unmount] undoes both. [Usage] is the
// statfs of a mounted image. [Sweep] unmounts what a previous run left mounted under a
// directory, and [Held] tells whether a loop device still holds an image.
//
// # Caveats
//
// Only Linux is supported; elsewhere every function fails with [ErrUnsupported].
// mkfs.ext4 is the only external program (looked up in PATH, /sbin and /usr/sbin);
// attaching and mounting use the loop-control ioctls and mount(2) directly. An image
// must never be mounted twice at once (two loop devices over one file corrupt it):
// callers check [Held] for the device a previous mount used before mounting again.
package diskimg
