package runtime

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile replaces the file at path with the bytes of r, atomically: it writes a
// temporary file beside it and renames it over the old one, so readers see the old or
// the new content, never a mix. Missing parent directories are made (0755).
//
// mode's permission bits are applied exactly (not masked by the umask). 0 keeps the
// permissions of the file being replaced, or means 0644 for a new one.
//
// A symlink is written through, as a shell's redirection does: its target gets the
// content and the link stays. A dangling link creates its target; a target outside the
// workspace (an absolute one counts as outside, as for os.Root) is ErrEscapes and
// nothing is written. A path spelt as a directory (ending
// in "/", "/." or "/..") is ErrInvalid.
//
// When WriteFile returns nil the file is on disk: the temporary file is fsynced before
// it is renamed into place, then its directory is fsynced, and so is the parent of each
// directory made on the way. A write cut short (a crash, kill -9) leaves at most a
// temporary file, which RemoveStaleTemps removes.
func (w *Workspace) WriteFile(path string, r io.Reader, mode *fs.FileMode) (err error) {
	defer wsWrap("write", path, &err)
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return err
	}
	if rel == "." {
		return ErrIsDir
	}
	if suffix, ok := wsNamesDir(path); ok {
		return fmt.Errorf("%w: a path ending in %q names a directory, not a file", ErrInvalid, suffix)
	}
	if rel, err = wsFollow(w.root, w.prefixes, rel); err != nil {
		return err
	}
	if rel == "." {
		return ErrIsDir
	}
	dir := filepath.Dir(rel)
	if err := w.mkdirAllSync(dir); err != nil {
		return wsParentErr(err)
	}
	var perm fs.FileMode
	fi, serr := w.root.Lstat(rel)
	switch {
	case serr == nil && fi.IsDir():
		return ErrIsDir
	case mode != nil:
		perm = *mode & fs.ModePerm
	case serr == nil && fi.Mode().IsRegular():
		perm = fi.Mode().Perm() // an edit must not cost a script its exec bit
	default:
		perm = 0o644
	}
	tmp := wsTempName(dir)
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = wsSync(f) // the content is on disk before the name points at it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, rel)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return err
	}
	return w.syncDir(dir)
}

// wsSync flushes f to disk. Tests replace it to see what is synced, and when.
var wsSync = (*os.File).Sync

// syncDir fsyncs the directory dir (relative to the workspace), so the entries made or
// renamed in it are on disk.
func (w *Workspace) syncDir(dir string) error {
	d, err := w.root.Open(dir)
	if err != nil {
		return err
	}
	err = wsSync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAllSync makes dir and its missing parents (0755), as os.Root.MkdirAll does, and
// fsyncs the parent of each directory it made, so they are on disk. An existing
// directory costs a stat and no fsync.
func (w *Workspace) mkdirAllSync(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := w.root.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	// The deepest ancestor that exists is where the first new entry goes.
	top := filepath.Dir(dir)
	for top != "." {
		if _, err := w.root.Lstat(top); err == nil {
			break
		}
		top = filepath.Dir(top)
	}
	if err := w.root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		parent := filepath.Dir(d)
		if err := w.syncDir(parent); err != nil {
			return err
		}
		if parent == top || parent == "." {
			return nil
		}
	}
}

// Remove removes a file, symlink or directory. A directory with entries needs
// recursive, else it is ErrNotEmpty. The workspace itself cannot be removed
// (ErrInvalid); a missing path is ErrFileNotFound.
func (w *Workspace) Remove(path string, recursive bool) (err error) {
	defer wsWrap("remove", path, &err)
	rel, err := w.lookup(path, false)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("%w: cannot remove the workspace itself", ErrInvalid)
	}
	if _, err := w.root.Lstat(rel); err != nil {
		return wsUnderFile(err)
	}
	if recursive {
		return w.root.RemoveAll(rel)
	}
	err = w.root.Remove(rel)
	if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
		return ErrNotEmpty
	}
	return err
}

// Mkdir makes a directory (0755) and, as WriteFile does, fsyncs the parent of every
// directory it makes before it returns. Without parents, a missing parent is ErrFileNotFound
// and an existing path is ErrExist; with parents, missing parents are made and an
// existing directory is fine (anything else there is ErrExist).
func (w *Workspace) Mkdir(path string, parents bool) (err error) {
	defer wsWrap("make directory", path, &err)
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return err
	}
	if rel, err = w.follow(rel, false); err != nil {
		return err
	}
	if parents {
		// A link is followed, as mkdir -p does: a link to a directory is fine; one
		// pointing out is ErrEscapes like any other path that resolves outside, and a
		// dangling one is in the way.
		fi, err := w.root.Lstat(rel)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, ferr := wsFollow(w.root, w.prefixes, rel)
			if ferr != nil {
				return ferr
			}
			if fi, err = w.root.Lstat(target); errors.Is(err, fs.ErrNotExist) {
				return ErrExist
			}
		}
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil:
			return ErrExist
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		return wsParentErr(w.mkdirAllSync(rel))
	}
	if rel == "." {
		return ErrExist
	}
	if err := w.root.Mkdir(rel, 0o755); err != nil {
		return err
	}
	return w.syncDir(filepath.Dir(rel))
}

// wsParentErr maps MkdirAll meeting a non-directory on the way ("exists") to ErrNotDir.
func wsParentErr(err error) error {
	if errors.Is(wsMapErr(err), fs.ErrExist) {
		return ErrNotDir
	}
	return err
}

// wsWrap maps *errp to the package's sentinels and prefixes it with the operation.
func wsWrap(op, path string, errp *error) {
	if *errp != nil {
		*errp = fmt.Errorf("runtime: failed to %s %q: %w", op, path, wsMapErr(*errp))
	}
}

// wsMapErr turns os and os.Root errors into the package's sentinels; errors already
// wrapping one, and others, are returned as they are.
func wsMapErr(err error) error {
	for _, s := range []error{ErrEscapes, ErrInvalid, ErrFileNotFound, ErrIsDir, ErrNotDir, ErrNotEmpty, ErrExist} {
		if errors.Is(err, s) {
			return err
		}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return ErrEscapes // os.Root's unexported errPathEscapes
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%w: too many levels of symbolic links", ErrInvalid)
	case errors.Is(err, syscall.EISDIR):
		return ErrIsDir
	case errors.Is(err, syscall.ENOTDIR):
		return ErrNotDir
	case errors.Is(err, syscall.ENOTEMPTY):
		return ErrNotEmpty
	case errors.Is(err, fs.ErrNotExist):
		return ErrFileNotFound
	case errors.Is(err, fs.ErrExist):
		return ErrExist
	}
	return err
}
