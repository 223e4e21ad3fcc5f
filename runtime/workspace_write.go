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
// the new content, never a mix. Missing parent directories are made (0755). mode's
// permission bits are applied exactly (not masked by the umask); 0 means 0644. A symlink
// at path is replaced, not written through.
func (w *Workspace) WriteFile(path string, r io.Reader, mode fs.FileMode) (err error) {
	defer wsWrap("write", path, &err)
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return err
	}
	if rel == "." {
		return ErrIsDir
	}
	if mode == 0 {
		mode = 0o644
	}
	mode &= fs.ModePerm
	dir := filepath.Dir(rel)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return wsParentErr(err)
		}
	}
	if fi, err := w.root.Lstat(rel); err == nil && fi.IsDir() {
		return ErrIsDir
	}
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+".sandgate-"+sessRandHex(6)+".tmp")
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, rel)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
	}
	return err
}

// Remove removes a file, symlink or directory. A directory with entries needs
// recursive, else it is ErrNotEmpty. The workspace itself cannot be removed
// (ErrInvalid); a missing path is ErrFileNotFound.
func (w *Workspace) Remove(path string, recursive bool) (err error) {
	defer wsWrap("remove", path, &err)
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("%w: cannot remove the workspace itself", ErrInvalid)
	}
	if _, err := w.root.Lstat(rel); err != nil {
		return err
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

// Mkdir makes a directory (0755). Without parents, a missing parent is ErrFileNotFound
// and an existing path is ErrExist; with parents, missing parents are made and an
// existing directory is fine (anything else there is ErrExist).
func (w *Workspace) Mkdir(path string, parents bool) (err error) {
	defer wsWrap("make directory", path, &err)
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return err
	}
	if parents {
		if fi, err := w.root.Lstat(rel); err == nil && !fi.IsDir() {
			return ErrExist
		}
		return wsParentErr(w.root.MkdirAll(rel, 0o755))
	}
	if rel == "." {
		return ErrExist
	}
	return w.root.Mkdir(rel, 0o755)
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
