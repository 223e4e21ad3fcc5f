//go:build !linux

package diskimg

import (
	"context"
	"fmt"
)

var errNotLinux = fmt.Errorf("%w: loop-mounted images need Linux", ErrUnsupported)

// Supported reports why this machine cannot make and mount images: only Linux can.
func Supported() error { return errNotLinux }

// Create fails: only Linux can make images.
func Create(ctx context.Context, path string, size int64) error { return errNotLinux }

// Attach fails: only Linux can mount images.
func Attach(image, dir string) (*Mount, error) { return nil, errNotLinux }

// Unmount fails: only Linux can mount images.
func (m *Mount) Unmount() (lazy bool, err error) { return false, errNotLinux }

// Detach does nothing: only Linux can mount images.
func Detach(dir string) error { return nil }

// Usage fails: only Linux can mount images.
func Usage(dir string) (Space, error) { return Space{}, errNotLinux }

// Held reports false: only Linux can mount images.
func Held(loop int, image string) bool { return false }

// Sweep finds nothing to do: only Linux can mount images.
func Sweep(mountDir, imageDir string) ([]string, error) { return nil, nil }

// MountsUnder finds nothing: only Linux can mount images.
func MountsUnder(dir string) ([]string, error) { return nil, nil }

// LoopsUnder finds nothing: only Linux has loop devices.
func LoopsUnder(dir string) ([]Loop, error) { return nil, nil }

// Holders names no process: only Linux has loop devices.
func Holders(n int) []string { return nil }
