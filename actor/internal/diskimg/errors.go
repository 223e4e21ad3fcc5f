package diskimg

import "errors"

// Errors of this package, matched with errors.Is.
var (
	// ErrUnsupported: this machine cannot make or mount images (not Linux, not root,
	// no loop devices or no mkfs.ext4); the wrapping error says why.
	ErrUnsupported = errors.New("diskimg: disk images are not supported here")
	// ErrMounted: the directory is already a mount point.
	ErrMounted = errors.New("diskimg: directory is already a mount point")
)
