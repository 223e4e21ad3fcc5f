package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fillWorkspace makes a workspace of every kind PackWorkspace carries, and a FIFO it
// leaves out.
func fillWorkspace(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub", "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	must(os.WriteFile(filepath.Join(dir, "sub", "deep", "big.bin"), big, 0o600))
	must(os.Symlink("../a.txt", filepath.Join(dir, "sub", "link")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "outside")))
	must(os.Mkdir(filepath.Join(dir, "ro"), 0o555))
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	must(os.Chtimes(filepath.Join(dir, "a.txt"), old, old))
	must(os.Chtimes(filepath.Join(dir, "sub", "deep"), old, old))
	must(wsMkfifo(filepath.Join(dir, "fifo")))
}

// treeOf describes every entry under dir: kind, mode, size, mtime, link target and a
// digest of the content.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += " " + fi.ModTime().UTC().Format(time.RFC3339Nano) + " " + fmt.Sprintf("%x", sha256.Sum256(b))
		case fi.IsDir():
			desc += " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWorkspaceTarRoundTrip(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	fillWorkspace(t, filepath.Join(src, "sb1"))
	// An earlier stay's leftover at the target is replaced whole.
	if err := os.MkdirAll(filepath.Join(dst, "sb1", "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := PackWorkspace(context.Background(), &buf, src, "sb1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 || st.Symlinks != 2 || st.Skipped != 1 || st.Dirs != 3 {
		t.Fatalf("stats %+v, want 3 files, 2 symlinks, 3 dirs, 1 skipped", st)
	}
	installs := 0
	err = UnpackWorkspace(context.Background(), &buf, dst, "sb1", UnpackOptions{Chown: os.Geteuid() == 0, Install: func() error { installs++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	want := treeOf(t, filepath.Join(src, "sb1"))
	delete(want, "fifo")
	got := treeOf(t, filepath.Join(dst, "sb1"))
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected entry %s", k)
		}
	}
	if installs != 1 {
		t.Fatalf("Install called %d times", installs)
	}
	assertOnly(t, dst, "sb1")
}

// assertOnly checks that dir holds exactly names (no temporary directory is left).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}

// brokenReader returns the first n bytes of r, then an error, as a connection that
// dies mid-stream does.
type brokenReader struct {
	r io.Reader
	n int64
}

func (b *brokenReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

func TestWorkspaceUnpackInstallsNothingOnFailure(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	fillWorkspace(t, filepath.Join(src, "sb1"))
	var whole bytes.Buffer
	if _, err := PackWorkspace(context.Background(), &whole, src, "sb1", PackOptions{}); err != nil {
		t.Fatal(err)
	}
	hostile := func(entries ...*tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range entries {
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if h.Size > 0 {
				_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		_ = tw.Close()
		return b.Bytes()
	}
	tests := []struct {
		name    string
		r       io.Reader
		o       UnpackOptions
		wantErr error
	}{
		{"broken mid-stream", &brokenReader{r: bytes.NewReader(whole.Bytes()), n: int64(whole.Len() / 2)}, UnpackOptions{}, nil},
		{"too large", bytes.NewReader(whole.Bytes()), UnpackOptions{MaxBytes: 1000}, ErrWorkspaceTooLarge},
		{"refused at install", bytes.NewReader(whole.Bytes()), UnpackOptions{Install: func() error { return ErrClosed }}, ErrClosed},
		{"dot-dot name", bytes.NewReader(hostile(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})), UnpackOptions{}, ErrInvalid},
		{"absolute name", bytes.NewReader(hostile(&tar.Header{Name: "/tmp/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})), UnpackOptions{}, ErrInvalid},
		{"write through a symlink", bytes.NewReader(hostile(
			&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/tmp", Mode: 0o777},
			&tar.Header{Name: "l/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})), UnpackOptions{}, nil},
		{"device", bytes.NewReader(hostile(&tar.Header{Name: "dev", Typeflag: tar.TypeChar, Mode: 0o644})), UnpackOptions{}, ErrInvalid},
		{"hard link to nothing", bytes.NewReader(hostile(&tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "missing"})), UnpackOptions{}, ErrInvalid},
		{"hard link outside", bytes.NewReader(hostile(&tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "../../../../etc/passwd"})), UnpackOptions{}, ErrInvalid},
		{"hard link through a symlink", bytes.NewReader(hostile(
			&tar.Header{Name: "s", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777},
			&tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "s/passwd"})), UnpackOptions{}, ErrInvalid},
		{"hard link to a directory", bytes.NewReader(hostile(
			&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755},
			&tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "d"})), UnpackOptions{}, ErrInvalid},
		{"hard link to a symlink", bytes.NewReader(hostile(
			&tar.Header{Name: "s", Typeflag: tar.TypeSymlink, Linkname: "x", Mode: 0o777},
			&tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "s"})), UnpackOptions{}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dst := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dst, "sb1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, "sb1", "kept"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := UnpackWorkspace(context.Background(), tt.r, dst, "sb1", tt.o)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			assertOnly(t, dst, "sb1")
			assertOnly(t, filepath.Join(dst, "sb1"), "kept")
			if _, err := os.Stat("/tmp/evil"); err == nil {
				t.Fatal("/tmp/evil was written")
			}
		})
	}
}

// TestWorkspaceTarHardLinks: a file with several names in the workspace travels once
// and arrives as one file with the same names, counted once against the bound.
func TestWorkspaceTarHardLinks(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	ws := filepath.Join(src, "sb1")
	for _, d := range []string{"pkg", "store"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	content := bytes.Repeat([]byte("shared "), 1000)
	if err := os.WriteFile(filepath.Join(ws, "store", "blob"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "alone"), []byte("one name"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"pkg/a", "pkg/b", "z"}
	for _, n := range names {
		if err := os.Link(filepath.Join(ws, "store", "blob"), filepath.Join(ws, n)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	// The bound fits the shared file once, not four times.
	st, err := PackWorkspace(context.Background(), &buf, src, "sb1", PackOptions{MaxBytes: int64(len(content)) + 100})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 2 || st.Links != 3 || st.Bytes != int64(len(content))+8 {
		t.Fatalf("stats %+v, want 2 files, 3 links, %d bytes", st, len(content)+8)
	}
	if err := UnpackWorkspace(context.Background(), &buf, dst, "sb1", UnpackOptions{MaxBytes: int64(len(content)) + 100}); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(dst, "sb1")
	blob, err := os.Stat(filepath.Join(got, "store", "blob"))
	if err != nil {
		t.Fatal(err)
	}
	if linkCount(blob) != 4 {
		t.Fatalf("the shared file has %d names, want 4", linkCount(blob))
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(got, n))
		if err != nil || !os.SameFile(fi, blob) {
			t.Fatalf("%s: %v, or not the same file as store/blob", n, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(got, "alone")); err != nil || os.SameFile(fi, blob) || linkCount(fi) != 1 {
		t.Fatalf("alone: %v; want a file of its own", err)
	}
	if b, err := os.ReadFile(filepath.Join(got, "pkg", "b")); err != nil || !bytes.Equal(b, content) {
		t.Fatalf("pkg/b: %d bytes, %v", len(b), err)
	}
}

func TestWorkspacePackBounds(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	fillWorkspace(t, filepath.Join(src, "sb1"))
	if err := os.Symlink("sb1", filepath.Join(src, "sb2")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sb      string
		o       PackOptions
		wantErr error
	}{
		{"over the bound", "sb1", PackOptions{MaxBytes: 1 << 20}, ErrWorkspaceTooLarge},
		{"workspace is a symlink", "sb2", PackOptions{}, ErrInvalid},
		{"missing", "sb3", PackOptions{}, ErrFileNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := PackWorkspace(context.Background(), io.Discard, src, tt.sb, tt.o)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
		})
	}
}
