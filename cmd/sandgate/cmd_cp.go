package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/sdk"
)

func cmdCp(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "cp", `[flags] SANDBOX:SRC DEST | SRC SANDBOX:DEST

Copies a file or a directory between a sandbox and the local file system, byte for
byte. A sandbox path is relative to its workspace, or absolute inside it. As with
docker cp, a DEST that is an existing directory (or ends in /) receives SRC under
its own name; a directory is copied with everything in it (symbolic links are
skipped, and said so). A local DEST of - writes a sandbox file to stdout.`)
	pos, code, ok := f.parse(e, args, 2, 2)
	if !ok {
		return code
	}
	srcSB, src, srcRemote := remotePath(pos[0])
	dstSB, dst, dstRemote := remotePath(pos[1])
	if srcRemote == dstRemote {
		return f.usageError(e, "exactly one of SRC and DEST must be SANDBOX:PATH")
	}
	cp := &copier{e: e, c: f.client(e)}
	var err error
	if srcRemote {
		cp.sb = srcSB
		err = cp.download(ctx, src, dst)
	} else {
		cp.sb = dstSB
		err = cp.upload(ctx, src, dst)
	}
	if err != nil {
		return f.fail(ctx, e, err)
	}
	return 0
}

// remotePath splits "SANDBOX:PATH". A local path may hold a colon too, so the part
// before it must look like a sandbox id: no slash, not empty.
func remotePath(arg string) (sb, p string, ok bool) {
	sb, p, ok = strings.Cut(arg, ":")
	if !ok || sb == "" || strings.ContainsAny(sb, `/\`) || strings.HasPrefix(sb, ".") {
		return "", arg, false
	}
	if p == "" {
		p = "."
	}
	return sb, p, true
}

// copier copies between one sandbox and the local file system.
type copier struct {
	e  *env
	c  *sdk.Client
	sb string
}

// download copies the sandbox's src to the local dst.
func (cp *copier) download(ctx context.Context, src, dst string) error {
	got, err := cp.c.GetPath(ctx, cp.sb, src)
	if err != nil {
		return err
	}
	if dst == "-" {
		if got.Dir {
			return fmt.Errorf("%s:%s is a directory: it cannot be written to stdout", cp.sb, src)
		}
		defer got.Body.Close()
		if _, err := io.Copy(cp.e.stdout, got.Body); err != nil {
			return fmt.Errorf("failed to copy %s:%s to stdout: %w", cp.sb, src, err)
		}
		return nil
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() || strings.HasSuffix(dst, string(filepath.Separator)) {
		dst = filepath.Join(dst, path.Base(src))
	}
	if !got.Dir {
		return cp.saveFile(got.Body, src, dst, 0o644)
	}
	return cp.saveDir(ctx, src, dst, got.Entries)
}

// saveFile writes body, the bytes of the sandbox's src, to the local file dst.
func (cp *copier) saveFile(body io.ReadCloser, src, dst string, mode fs.FileMode) error {
	defer body.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", dst, err)
	}
	if _, err := io.Copy(out, body); err != nil {
		out.Close()
		return fmt.Errorf("failed to copy %s:%s to %s: %w", cp.sb, src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return nil
}

// saveDir makes the local directory dst and copies the entries of the sandbox's
// directory src into it, recursively.
func (cp *copier) saveDir(ctx context.Context, src, dst string, entries []sdk.DirEntry) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("failed to make %s: %w", dst, err)
	}
	for _, ent := range entries {
		s, d := path.Join(src, ent.Name), filepath.Join(dst, ent.Name)
		if ent.Type != "file" && ent.Type != "dir" {
			fmt.Fprintf(cp.e.stderr, "sandgate cp: skipped %s:%s (a %s)\n", cp.sb, s, ent.Type)
			continue
		}
		got, err := cp.c.GetPath(ctx, cp.sb, s)
		if err != nil {
			return err
		}
		if got.Dir {
			err = cp.saveDir(ctx, s, d, got.Entries)
		} else {
			mode := fs.FileMode(ent.Mode).Perm()
			if mode == 0 {
				mode = 0o644
			}
			err = cp.saveFile(got.Body, s, d, mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// upload copies the local src to the sandbox's dst.
func (cp *copier) upload(ctx context.Context, src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", src, err)
	}
	into := strings.HasSuffix(dst, "/")
	if !into {
		got, err := cp.c.GetPath(ctx, cp.sb, dst)
		switch {
		case err == nil:
			into = got.Dir
			if got.Body != nil {
				got.Body.Close()
			}
		case !sdk.IsNotFound(err):
			return err
		}
	}
	if into {
		dst = path.Join(dst, filepath.Base(src))
	}
	if !st.IsDir() {
		return cp.sendFile(ctx, src, dst, st.Mode())
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", p, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("failed to copy %s: %w", p, err)
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			return cp.c.Mkdir(ctx, cp.sb, sdk.MkdirRequest{Path: target, Parents: true})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("failed to read %s: %w", p, err)
			}
			return cp.sendFile(ctx, p, target, info.Mode())
		}
		fmt.Fprintf(cp.e.stderr, "sandgate cp: skipped %s (not a regular file or directory)\n", p)
		return nil
	})
}

// sendFile writes the local file src to the sandbox's dst with src's permissions.
func (cp *copier) sendFile(ctx context.Context, src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", src, err)
	}
	defer in.Close()
	if err := cp.c.WriteFile(ctx, cp.sb, dst, in, &sdk.WriteFileOptions{Mode: mode.Perm()}); err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return err
		}
		return fmt.Errorf("failed to copy %s to %s:%s: %w", src, cp.sb, dst, err)
	}
	return nil
}
