package runtime

import (
	"fmt"
	"path/filepath"
	"strings"
)

// MaxNameLen is the longest path element, in bytes, a workspace accepts: Linux's
// NAME_MAX. A longer one is ErrInvalid, never a failure half-way through a write.
const MaxNameLen = 255

// wsResolve turns a caller's path into a path relative to the workspace, or fails with
// ErrEscapes. p is relative to the workspace, or absolute with one of the workspace's
// absolute spellings (prefixes, each clean and absolute) in front. The result is "." or
// a local path (filepath.IsLocal) with no "..". It is lexical only: symlinks are
// confined by os.Root when the path is used.
func wsResolve(prefixes []string, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: path holds a NUL byte", ErrInvalid)
	}
	if p == "" {
		return ".", nil
	}
	rel := p
	if filepath.IsAbs(p) {
		rel = ""
		clean := filepath.Clean(p)
		for _, pre := range prefixes {
			if r, ok := wsTrimPrefix(clean, pre); ok {
				rel = r
				break
			}
		}
		if rel == "" {
			return "", fmt.Errorf("%w: %q", ErrEscapes, p)
		}
	}
	rel = filepath.Clean(rel)
	if rel != "." && !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %q", ErrEscapes, p)
	}
	for elem := range strings.SplitSeq(rel, "/") {
		if len(elem) > MaxNameLen {
			return "", fmt.Errorf("%w: a path element of %d bytes is over the limit of %d bytes", ErrInvalid, len(elem), MaxNameLen)
		}
	}
	return rel, nil
}

// wsTrimPrefix returns p relative to dir if p is dir or lies under it.
func wsTrimPrefix(p, dir string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return p[1:], true
	}
	if rest, ok := strings.CutPrefix(p, dir+"/"); ok && rest != "" {
		return rest, true
	}
	return "", false
}
