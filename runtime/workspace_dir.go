package runtime

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DirReader reads a workspace directory a batch at a time, in the filesystem's order,
// so a directory of a million entries is listed without holding them all (ReadDir
// holds them all, to sort them). Open one with [Workspace.OpenDir].
//
// Concurrency: a DirReader is used by one goroutine at a time. It stays valid after
// its Workspace is closed, until its own Close.
type DirReader struct {
	f    *os.File
	path string
}

// OpenDir opens the directory at path for reading in batches. Path rules and errors
// are ReadDir's: a path that is no directory is ErrNotDir.
func (w *Workspace) OpenDir(path string) (_ *DirReader, err error) {
	defer wsWrap("read directory", path, &err)
	rel, err := w.lookup(path, true)
	if err != nil {
		return nil, err
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, wsUnderFile(err)
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if err == nil {
			err = ErrNotDir
		}
		return nil, err
	}
	return &DirReader{f: f, path: path}, nil
}

// Next returns up to n more entries (n > 0), described without following symlinks as
// ReadDir does; entries removed since the directory was read are left out. At the end
// of the directory it returns io.EOF with no entries.
func (d *DirReader) Next(n int) (_ []DirEntry, err error) {
	ents, err := d.f.ReadDir(n)
	if err != nil && !errors.Is(err, io.EOF) {
		wsWrap("read directory", d.path, &err)
		return nil, err
	}
	if len(ents) == 0 {
		return nil, io.EOF
	}
	out := make([]DirEntry, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			wsWrap("read directory", d.path, &err)
			return nil, err
		}
		out = append(out, wsEntry(fi))
	}
	return out, nil
}

// Close releases the directory.
func (d *DirReader) Close() error { return d.f.Close() }
