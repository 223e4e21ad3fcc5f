package runtime

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// noFollow refuses to open a symlink as the last element of a path.
const noFollow = syscall.O_NOFOLLOW

// syncTree puts an unpacked workspace on disk before it is renamed into place. One
// syncfs(2) of its filesystem costs one flush however many files it holds, where an
// fsync per file costs a journal commit each.
func syncTree(root *os.Root, _ []string) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: d.Name(), Err: err}
	}
	return nil
}
