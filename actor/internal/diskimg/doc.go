// Package diskimg gives a directory a size limit by mounting a file-backed ext4 image
// on it: the workspace disk quota on kernels without filesystem quotas.
//
// # Entry points
//
// [Supported] says whether this machine can (root, loop devices, mkfs.ext4), and why
// not. [Create] makes a sparse image of a given size; [Attach] attaches it to a free
// loop device and mounts it on a directory, and [Mount.Unmount] undoes both ([Detach]
// at once and lazily, for a process about to exit). [Usage] is the statfs of a mounted
// image. [Sweep] unmounts what a previous run left mounted under a directory;
// [MountsUnder], [LoopsUnder] and [Held] tell what is still mounted or attached.
//
// # Caveats
//
// Only Linux is supported; elsewhere Supported reports [ErrUnsupported] and nothing is
// ever mounted. mkfs.ext4 is the only external program (looked up in PATH, /sbin and
// /usr/sbin); attaching and mounting use the loop-control ioctls and mount(2) directly.
// An image must never be mounted twice at once (two loop devices over one file corrupt
// it), and the kernel may let a device go a moment after the unmount returns: callers
// check [Held] for the device of an image's previous mount before mounting it again.
// Functions are safe for concurrent use; a [Mount] has one owner.
package diskimg
