package diskimg

// MinSize is the smallest image Create makes: a smaller size is rounded up to it, as
// mkfs.ext4 leaves out the journal below about 2 MiB and an image without one is not
// crash-safe.
const MinSize = 4 << 20

// Mount is a mounted image: Image, attached to loop device /dev/loop<Loop>, mounted on
// Dir. It is not safe for concurrent use: one owner mounts and unmounts it.
type Mount struct {
	// Image is the image file's path.
	Image string
	// Dir is where it is mounted.
	Dir string
	// Loop is the loop device's number: pass it to Held to tell when the device has
	// let the image go.
	Loop int
	// autoclear is false when the kernel did not keep LO_FLAGS_AUTOCLEAR: Unmount
	// then detaches the device itself.
	autoclear bool
}

// Loop is a loop device, /dev/loop<N>, and the file bound to it.
type Loop struct {
	N    int
	File string
}

// Space is a mounted image's statfs: bytes used by files and the bytes files may use
// in all (the filesystem's own metadata and journal are in neither).
type Space struct {
	Used, Total int64
}
