package runtime

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// The receiving side of workspace archives (workspace_pack.go).

// Names of UnpackWorkspace's temporary directories in the workspaces' parent: no
// sandbox id starts with a dot.
const (
	unpackTempPrefix     = ".incoming-"
	unpackReplacedPrefix = ".replaced-"
)

// UnpackTemp reports whether name, an entry of a workspaces directory, is what an
// UnpackWorkspace that did not finish (the process died) left behind: it may be
// removed when no unpack into that directory runs.
func UnpackTemp(name string) bool {
	return strings.HasPrefix(name, unpackTempPrefix) || strings.HasPrefix(name, unpackReplacedPrefix)
}

// UnpackOptions are the settings of one UnpackWorkspace call.
type UnpackOptions struct {
	// MaxBytes bounds the total size of the regular files received; past it the
	// unpack fails with ErrWorkspaceTooLarge and nothing is installed. 0 means no
	// bound.
	MaxBytes int64
	// Chown gives entries the owners the stream names (numeric ids); it needs root.
	Chown bool
	// Install, when set, is called once the stream arrived whole and is on disk,
	// just before the rename that installs it; an error from it installs nothing.
	// The caller checks there that it still may replace the target.
	Install func() error
}

// UnpackWorkspace reads a stream PackWorkspace wrote from r and installs it as the
// workspace directory name of parent, replacing whatever was there (a directory of an
// earlier stay, which must not be in use). The stream is unpacked into a new
// directory of parent whose name starts with ".", synced, and renamed into place only
// once it ended cleanly: a stream that breaks, is malformed or too large installs
// nothing and leaves the target as it was. Entries are created through an os.Root of
// that directory, so no name or link in the stream reaches outside it.
func UnpackWorkspace(ctx context.Context, r io.Reader, parent, name string, o UnpackOptions) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("runtime: failed to unpack workspace %q: %w", name, err)
		}
	}()
	if name == "" || name == "." || !fs.ValidPath(name) || strings.ContainsRune(name, '/') || name[0] == '.' {
		return fmt.Errorf("%w: not one path element", ErrInvalid)
	}
	outer, err := os.OpenRoot(parent)
	if err != nil {
		return err
	}
	defer outer.Close()
	tmp := unpackTempPrefix + name + "-" + sessRandHex(6)
	if err := outer.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	installed := false
	defer func() {
		if !installed {
			_ = outer.RemoveAll(tmp)
		}
	}()
	if err := unpackIn(ctx, r, outer, tmp, o); err != nil {
		return err
	}
	if o.Install != nil {
		if err := o.Install(); err != nil {
			return err
		}
	}
	if err := replaceDir(outer, tmp, name); err != nil {
		return err
	}
	installed = true
	return syncDir(outer, ".")
}

// UnpackInto reads a stream PackWorkspace wrote from r into dir, an existing empty
// directory (the root of a filesystem image being filled, say), and syncs it to disk.
// It installs nothing: on an error dir holds part of the stream, and the caller, who
// made dir, throws it away. o.Install is not called.
func UnpackInto(ctx context.Context, r io.Reader, dir string, o UnpackOptions) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("runtime: failed to unpack workspace into %s: %w", dir, err)
		}
	}()
	outer, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer outer.Close()
	return unpackIn(ctx, r, outer, ".", o)
}

// unpackIn unpacks r into directory name of outer and syncs it.
func unpackIn(ctx context.Context, r io.Reader, outer *os.Root, name string, o UnpackOptions) error {
	root, err := outer.OpenRoot(name)
	if err != nil {
		return err
	}
	defer root.Close()
	files, err := unpackAll(ctx, tar.NewReader(bufio.NewReaderSize(r, tarBuffer)), root, o)
	if err != nil {
		return err
	}
	return syncTree(root, files)
}

// unpackAll creates every entry of the stream under root and returns the regular
// files written. Directory times are set last: their entries change them.
func unpackAll(ctx context.Context, tr *tar.Reader, root *os.Root, o UnpackOptions) ([]string, error) {
	type dirAttr struct {
		name string
		mode fs.FileMode
		t    time.Time
	}
	var dirs []dirAttr
	var files []string
	var total int64
	dc := &dirCache{top: root}
	defer dc.close()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p := strings.TrimSuffix(hdr.Name, "/")
		if !fs.ValidPath(p) || p == "." {
			return nil, fmt.Errorf("%w: entry name %q", ErrInvalid, hdr.Name)
		}
		mode := fs.FileMode(hdr.Mode) & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		d, base, err := dc.in(p)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := d.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
			dirs = append(dirs, dirAttr{p, mode, hdr.ModTime})
		case tar.TypeSymlink:
			if err := d.Symlink(hdr.Linkname, base); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if total += hdr.Size; o.MaxBytes > 0 && total > o.MaxBytes {
				return nil, fmt.Errorf("%w: more than %d bytes of files", ErrWorkspaceTooLarge, o.MaxBytes)
			}
			if err := unpackFile(d, base, tr, hdr.Size); err != nil {
				return nil, err
			}
			files = append(files, p)
		case tar.TypeLink:
			if err := unpackLink(root, hdr.Linkname, p); err != nil {
				return nil, err
			}
			files = append(files, p)
		default:
			return nil, fmt.Errorf("%w: entry %q of type %q", ErrInvalid, hdr.Name, hdr.Typeflag)
		}
		if o.Chown {
			if err := d.Lchown(base, hdr.Uid, hdr.Gid); err != nil {
				return nil, err
			}
		}
		if hdr.Typeflag == tar.TypeReg {
			// After the chown, which clears setuid and setgid bits. A directory's
			// mode is set last: a read-only one would refuse its own entries.
			if err := d.Chmod(base, mode); err != nil {
				return nil, err
			}
			if err := d.Chtimes(base, hdr.ModTime, hdr.ModTime); err != nil {
				return nil, err
			}
		}
	}
	dc.close()
	for i := len(dirs) - 1; i >= 0; i-- { // children before parents
		d := dirs[i]
		if err := root.Chmod(d.name, d.mode); err != nil {
			return nil, err
		}
		if err := root.Chtimes(d.name, d.t, d.t); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// dirCache keeps the directory of the last entry unpacked open, as an os.Root of its
// own: a stream lists a directory's entries together, and making each by name in its
// directory spares the walk from the top that every call on the top Root makes (one
// openat per path element). Names still resolve inside the top Root only.
type dirCache struct {
	top  *os.Root
	name string
	r    *os.Root
}

// in returns the Root of p's directory and p's last element.
func (c *dirCache) in(p string) (*os.Root, string, error) {
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return c.top, base, nil
	}
	if c.r != nil && c.name == dir {
		return c.r, base, nil
	}
	c.close()
	r, err := c.top.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	c.name, c.r = dir, r
	return r, base, nil
}

func (c *dirCache) close() {
	if c.r != nil {
		_ = c.r.Close()
		c.r = nil
	}
}

// unpackFile writes the size bytes of one regular file from r to a new file p.
func unpackFile(root *os.Root, p string, r io.Reader, size int64) error {
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = io.CopyN(f, r, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unpackLink makes p a further name of target, a regular file the stream made before
// (a hard link). Anything else, a directory, a symlink, a name not yet made, is refused.
// Both names resolve inside root.
func unpackLink(root *os.Root, target, p string) error {
	if !fs.ValidPath(target) || target == "." {
		return fmt.Errorf("%w: hard link %q to %q", ErrInvalid, p, target)
	}
	fi, err := root.Lstat(target)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: hard link %q to %q, which is not a file of the stream", ErrInvalid, p, target)
	}
	return root.Link(target, p)
}

// replaceDir renames directory tmp of outer to name, moving an existing name aside
// first and removing it once the new one is in place.
func replaceDir(outer *os.Root, tmp, name string) error {
	old := ""
	if _, err := outer.Lstat(name); err == nil {
		old = unpackReplacedPrefix + name + "-" + sessRandHex(6)
		if err := outer.Rename(name, old); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := outer.Rename(tmp, name); err != nil {
		if old != "" {
			_ = outer.Rename(old, name)
		}
		return err
	}
	if old != "" {
		_ = outer.RemoveAll(old)
	}
	return nil
}

// syncDir fsyncs directory p of root.
func syncDir(root *os.Root, p string) error {
	d, err := root.Open(p)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
