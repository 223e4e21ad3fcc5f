//go:build unix

package runtime

import (
	"io/fs"
	"syscall"
)

// inodeKey names a file apart from its names: its device and inode numbers.
type inodeKey struct{ dev, ino uint64 }

// inodeOf returns fi's file and its number of names (hard links), or 0 names where
// fi does not say.
func inodeOf(fi fs.FileInfo) (inodeKey, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return inodeKey{}, 0
	}
	return inodeKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, uint64(st.Nlink)
}
