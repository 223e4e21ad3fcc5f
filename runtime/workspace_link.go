package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// wsMaxLinks is how many symlinks one resolution follows before it fails, as Linux's
// MAXSYMLINKS.
const wsMaxLinks = 40

// wsFollow resolves the symlinks in rel (a wsResolve result) and returns the path it
// names with no symlink in it, so a write can put its temporary file beside the real
// target and rename onto it instead of onto a link, and so every file operation
// follows links as the sandbox's processes do. A relative target is taken from the
// link's directory; an absolute one is taken as the sandbox's processes see it: under
// one of prefixes (the workspace's absolute spellings, wsResolve's) it names that
// place in the workspace, and anywhere else it is ErrEscapes, as is a target that
// climbs out.
//
// From the first missing element on, the rest of rel is kept as it is (WriteFile makes
// those parents). A missing final target is fine, so a dangling link names the file to
// create; a missing directory inside a link's target is fs.ErrNotExist, as it is for
// os.Root and a shell.
//
// The result is only as good as the moment it was read: whoever uses it still goes
// through os.Root, which keeps a link swapped in meanwhile from reaching outside.
func wsFollow(root *os.Root, prefixes []string, rel string) (string, error) {
	var (
		done     []string       // resolved elements, none of them a symlink
		todo     = wsSplit(rel) // elements still to resolve
		fromLink int            // how many of todo's first elements came from link targets
		links    int            // symlinks followed so far
		missing  bool           // an element of done does not exist
	)
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		linked := fromLink > 0
		if linked {
			fromLink--
		}
		if name == ".." {
			if len(done) == 0 {
				return "", fmt.Errorf("%w: a symlink in %q points out", ErrEscapes, rel)
			}
			done = done[:len(done)-1]
			continue
		}
		if missing { // the rest is rel's own clean tail: no links, no ".."
			done = append(done, name)
			continue
		}
		next := filepath.Join(filepath.Join(done...), name)
		fi, err := root.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) && linked && len(todo) > 0:
			return "", err
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			done = append(done, name)
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, name)
			continue
		}
		if links++; links > wsMaxLinks {
			return "", &fs.PathError{Op: "resolve", Path: rel, Err: syscall.ELOOP}
		}
		target, err := root.Readlink(next)
		if err != nil {
			return "", err
		}
		parts := wsSplit(target)
		if filepath.IsAbs(target) {
			inside, ok := wsUnder(prefixes, parts)
			if !ok {
				return "", fmt.Errorf("%w: symlink %q points outside the workspace", ErrEscapes, next)
			}
			parts, done = inside, done[:0] // from the workspace's top
		}
		todo = append(parts, todo...)
		fromLink += len(parts)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

// wsSplit splits a slash-separated path into its elements, dropping empty and "."
// ones.
func wsSplit(p string) []string {
	var out []string
	for _, e := range strings.Split(p, "/") {
		if e != "" && e != "." {
			out = append(out, e)
		}
	}
	return out
}

// wsUnder returns the elements of an absolute link target, split by wsSplit, that
// follow the first of prefixes it starts with, and whether one matched. Elements
// after the prefix are left for the caller to resolve ("/workspace/../etc" climbs
// out there, as it does for the kernel).
func wsUnder(prefixes []string, target []string) ([]string, bool) {
	for _, pre := range prefixes {
		elems := wsSplit(pre)
		if len(target) >= len(elems) && slices.Equal(target[:len(elems)], elems) {
			return target[len(elems):], true
		}
	}
	return nil, false
}

// follow resolves the links in rel, a wsResolve result, with wsFollow; with last
// false the final element is kept as it is, so a link there names the link itself
// (what Stat, Remove and Mkdir act on).
func (w *Workspace) follow(rel string, last bool) (string, error) {
	if last {
		return wsFollow(w.root, w.prefixes, rel)
	}
	dir, base := filepath.Split(rel)
	if dir == "" {
		return rel, nil
	}
	d, err := wsFollow(w.root, w.prefixes, filepath.Clean(dir))
	if err != nil {
		return "", err
	}
	return filepath.Join(d, base), nil
}

// lookup resolves path for an operation on what is there (a read, a stat, a
// remove): wsResolve, then follow. A parent that is not a directory is
// ErrFileNotFound: nothing can be found under a file.
func (w *Workspace) lookup(path string, last bool) (string, error) {
	rel, err := wsResolve(w.prefixes, path)
	if err != nil {
		return "", err
	}
	if rel, err = w.follow(rel, last); err != nil {
		return "", wsUnderFile(err)
	}
	return rel, nil
}

// wsUnderFile turns the error of a path whose parent is not a directory (ENOTDIR)
// into ErrFileNotFound, for a lookup of what is there: there is no such file.
func wsUnderFile(err error) error {
	if errors.Is(wsMapErr(err), ErrNotDir) {
		return fmt.Errorf("%w: a parent of it is not a directory", ErrFileNotFound)
	}
	return err
}

// wsNamesDir reports whether p is spelt as a directory: it ends in "/" or its last
// element is "." or "..". Writing a file there is refused whatever is on disk.
func wsNamesDir(p string) (suffix string, ok bool) {
	last := p[strings.LastIndexByte(p, '/')+1:]
	switch {
	case last == "" && p != "":
		return "/", true
	case last == "." || last == "..":
		return "/" + last, true
	}
	return "", false
}
