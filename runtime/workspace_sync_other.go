//go:build !linux

package runtime

import (
	"os"
	"path"
	"syscall"
)

// noFollow refuses to open a symlink as the last element of a path.
const noFollow = syscall.O_NOFOLLOW

// syncTree puts an unpacked workspace on disk before it is renamed into place: each
// file, then each directory that holds one (no syncfs here).
func syncTree(root *os.Root, files []string) error {
	for _, p := range files {
		f, err := root.OpenFile(p, os.O_WRONLY|noFollow, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	for _, d := range dirsOf(files) {
		if err := syncDir(root, d); err != nil {
			return err
		}
	}
	return nil
}

// dirsOf returns every directory of root that holds one of files, and ".".
func dirsOf(files []string) []string {
	seen := map[string]bool{".": true}
	out := []string{"."}
	for _, f := range files {
		for d := path.Dir(f); !seen[d]; d = path.Dir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
