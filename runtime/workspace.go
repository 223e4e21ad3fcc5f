package runtime

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Workspace gives confined access to the files of a sandbox's workspace directory. It
// uses os.Root, so no path, however it is spelt and whatever symlinks it meets, reaches
// outside the directory: such paths fail with ErrEscapes and touch nothing.
//
// Paths are relative to the workspace, or absolute with the workspace's own absolute
// path (as given, or with symlinks resolved) in front, so what `pwd` prints in the
// sandbox works. Errors wrap ErrEscapes, ErrFileNotFound (which matches
// fs.ErrNotExist), ErrIsDir, ErrNotDir, ErrNotEmpty, ErrExist or ErrInvalid.
//
// Concurrency: all methods are safe for concurrent use. Close must not race other calls.
type Workspace struct {
	dir      string
	prefixes []string
	root     *os.Root
}

// DirEntry is one entry of a workspace directory.
type DirEntry struct {
	Name    string
	Type    string // "file", "dir" or "symlink"; other kinds (FIFOs, sockets) are "file"
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
}

// OpenWorkspace opens dir (which must exist) as a workspace.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("runtime: failed to open workspace: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("runtime: failed to open workspace: %w", wsMapErr(err))
	}
	w := &Workspace{dir: abs, prefixes: []string{abs}, root: root}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		w.prefixes = append(w.prefixes, real)
	}
	return w, nil
}

// OpenWorkspaceIn opens directory name of parent as a workspace, through an os.Root of
// parent. name must be one path element naming a directory that is parent's own entry:
// a symlink there, even to a directory inside parent, is refused with ErrInvalid and
// nothing it points to is touched. So a process that swaps its workspace directory for
// a symlink (to the host's / or another workspace) cannot turn file access elsewhere.
// A missing directory is ErrFileNotFound.
func OpenWorkspaceIn(parent, name string) (_ *Workspace, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("runtime: failed to open workspace %q: %w", name, wsMapErr(err))
		}
	}()
	if name == "" || name == "." || !filepath.IsLocal(name) || strings.ContainsRune(name, filepath.Separator) {
		return nil, fmt.Errorf("%w: not one path element", ErrInvalid)
	}
	abs, err := filepath.Abs(parent)
	if err != nil {
		return nil, err
	}
	outer, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	defer outer.Close()
	// Lstat does not follow name; OpenRoot would, inside parent. The directory opened
	// must be the one Lstat saw, or name was swapped in between.
	fi, err := outer.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%w: the workspace directory is a symlink", ErrInvalid)
	case !fi.IsDir():
		return nil, fmt.Errorf("%w: the workspace is not a directory", ErrInvalid)
	}
	root, err := outer.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if got, err := root.Stat("."); err != nil || !os.SameFile(fi, got) {
		root.Close()
		return nil, fmt.Errorf("%w: the workspace directory was replaced while being opened", ErrInvalid)
	}
	dir := filepath.Join(abs, name)
	w := &Workspace{dir: dir, prefixes: []string{dir}, root: root}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		w.prefixes = append(w.prefixes, filepath.Join(real, name))
	}
	return w, nil
}

// Dir returns the workspace's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// SeenAt adds abs, a clean absolute path, as one more spelling of the workspace in
// absolute paths: where the sandbox's processes see it (see GuestDir), so that a path
// they print works here too. Call it before using w.
func (w *Workspace) SeenAt(abs string) {
	if abs = filepath.Clean(abs); filepath.IsAbs(abs) && !slices.Contains(w.prefixes, abs) {
		w.prefixes = append(w.prefixes, abs)
	}
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Open opens a regular file for reading and returns it with its info. A directory is
// ErrIsDir; other non-regular files are ErrInvalid. The caller closes the file.
func (w *Workspace) Open(path string) (_ *os.File, _ fs.FileInfo, err error) {
	defer wsWrap("open", path, &err)
	rel, err := w.lookup(path, true)
	if err != nil {
		return nil, nil, err
	}
	// O_NONBLOCK: opening a FIFO must not hang; it is refused below.
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, wsUnderFile(err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = ErrIsDir
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%w: not a regular file", ErrInvalid)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadDir lists a directory, sorted by name. Entries are described without following
// symlinks.
func (w *Workspace) ReadDir(path string) ([]DirEntry, error) {
	d, err := w.OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out := []DirEntry{}
	for {
		batch, err := d.Next(1024)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		out = append(out, batch...)
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func wsEntry(fi fs.FileInfo) DirEntry {
	typ := "file"
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		typ = "symlink"
	case fi.IsDir():
		typ = "dir"
	}
	return DirEntry{Name: fi.Name(), Type: typ, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

// Stat describes a path without following a symlink in its last element.
func (w *Workspace) Stat(path string) (_ fs.FileInfo, err error) {
	defer wsWrap("stat", path, &err)
	rel, err := w.lookup(path, false)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Lstat(rel)
	return fi, wsUnderFile(err)
}

// Entry describes a path like Stat, as a DirEntry.
func (w *Workspace) Entry(path string) (DirEntry, error) {
	fi, err := w.Stat(path)
	if err != nil {
		return DirEntry{}, err
	}
	return wsEntry(fi), nil
}
