package runtime

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Workspace archives: a workspace as a tar stream, to move it to another node.
//
// PackWorkspace writes what a workspace holds as the runtime lays it out: directories,
// regular files and symlinks, with their modes, owners and modification times.
// Symlinks travel as links, never followed: the walk reads the directory through an
// os.Root, so nothing outside the workspace is read however its links point. A
// regular file with more than one name in the workspace (a hard link, as pnpm's store
// and `git clone --local` make) is sent once, under the first name the walk meets, and
// its other names as tar hard links to that one, so it arrives as one file again and
// counts once against MaxBytes. Other kinds of file (FIFOs, sockets, devices) are left
// out.
//
// UnpackWorkspace writes such a stream into a new directory beside the target and,
// only once all of it arrived, syncs it to disk and renames it into place: a stream
// that breaks leaves no part of itself behind, and what the target held before is
// replaced whole or not at all.

// PackOptions are the settings of one PackWorkspace call.
type PackOptions struct {
	// MaxBytes bounds the total size of the regular files; a workspace that holds
	// more fails with ErrWorkspaceTooLarge before anything past the bound is sent.
	// 0 means no bound.
	MaxBytes int64
}

// PackStats says what PackWorkspace sent.
type PackStats struct {
	// Files, Dirs and Symlinks count the entries sent, Links the further names of
	// files sent before (hard links); Skipped the ones left out (FIFOs, sockets,
	// devices).
	Files, Dirs, Symlinks, Links, Skipped int
	// Bytes is the total size of the regular files.
	Bytes int64
}

// PackWorkspace writes the workspace directory name of parent, a tar stream of it, to
// w. name must be parent's own entry, not a symlink (see OpenWorkspaceIn); a missing
// one is ErrFileNotFound. Nothing may write to the workspace meanwhile (its sandbox is
// stopped): a file that changes size under the walk fails it.
func PackWorkspace(ctx context.Context, w io.Writer, parent, name string, o PackOptions) (st PackStats, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("runtime: failed to pack workspace %q: %w", name, err)
		}
	}()
	ws, err := OpenWorkspaceIn(parent, name)
	if err != nil {
		return st, err
	}
	defer ws.Close()
	// Buffered: tar writes each header and each file in small pieces, and a pipe or
	// connection behind w costs a handoff per write.
	bw := bufio.NewWriterSize(w, tarBuffer)
	tw := tar.NewWriter(bw)
	root := ws.root
	pk := packer{tw: tw, root: root, st: &st, max: o.MaxBytes}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return err
		}
		return pk.entry(p, fi)
	})
	if err != nil {
		return st, err
	}
	if err := tw.Close(); err != nil {
		return st, err
	}
	return st, bw.Flush()
}

// tarBuffer is the buffer between a tar stream and its reader or writer.
const tarBuffer = 1 << 20

// packer is the state of one PackWorkspace walk.
type packer struct {
	tw   *tar.Writer
	root *os.Root
	st   *PackStats
	max  int64
	// sent maps each file with more than one name to the name it was sent under.
	sent map[inodeKey]string
}

// entry writes one entry of the walk.
func (pk *packer) entry(p string, fi fs.FileInfo) error {
	tw, root, st, max := pk.tw, pk.root, pk.st, pk.max
	hdr, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname = p, "", ""
	hdr.Format = tar.FormatPAX // long names, sub-second times
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	switch {
	case fi.IsDir():
		hdr.Name += "/"
		st.Dirs++
		return tw.WriteHeader(hdr)
	case fi.Mode()&fs.ModeSymlink != 0:
		if hdr.Linkname, err = root.Readlink(p); err != nil {
			return err
		}
		st.Symlinks++
		return tw.WriteHeader(hdr)
	case !fi.Mode().IsRegular():
		st.Skipped++
		return nil
	}
	if key, links := inodeOf(fi); links > 1 {
		if first, ok := pk.sent[key]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			st.Links++
			return tw.WriteHeader(hdr)
		}
		if pk.sent == nil {
			pk.sent = map[inodeKey]string{}
		}
		pk.sent[key] = p
	}
	if max > 0 && st.Bytes+fi.Size() > max {
		return fmt.Errorf("%w: more than %d bytes of files", ErrWorkspaceTooLarge, max)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		return fmt.Errorf("%w: %s was replaced while being packed", ErrInvalid, p)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("failed to copy %s: %w", p, err)
	}
	st.Files++
	st.Bytes += fi.Size()
	return nil
}
