package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// wsMaxLinks is how many symlinks one resolution follows before it fails, as Linux's
// MAXSYMLINKS.
const wsMaxLinks = 40

// wsFollow resolves the symlinks in rel (a wsResolve result) and returns the path it
// names with no symlink in it, so a write can put its temporary file beside the real
// target and rename onto it instead of onto a link. Links are followed by os.Root's
// rules, which every other workspace operation uses: a relative target is taken from
// the link's directory, and an absolute one, or one that climbs out, is ErrEscapes.
//
// From the first missing element on, the rest of rel is kept as it is (WriteFile makes
// those parents). A missing final target is fine, so a dangling link names the file to
// create; a missing directory inside a link's target is fs.ErrNotExist, as it is for
// os.Root and a shell.
//
// The result is only as good as the moment it was read: whoever uses it still goes
// through os.Root, which keeps a link swapped in meanwhile from reaching outside.
func wsFollow(root *os.Root, rel string) (string, error) {
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
		if filepath.IsAbs(target) {
			return "", fmt.Errorf("%w: symlink %q points to an absolute path", ErrEscapes, next)
		}
		parts := wsSplit(target)
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
