package nsinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUserNSWorkspaceOwnership checks the idmapped workspace both ways on each kind of
// filesystem a workspace lives on: files the host's root made (as the files API and
// the local driver do) are root's inside and writable there, and what root inside
// makes is root's on disk, with its mode. Without the idmapped mount root inside would
// be "others" to every file of the workspace.
func TestUserNSWorkspaceOwnership(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mount func(t *testing.T, dir string)
	}{
		{"ext4", func(*testing.T, string) {}},
		{"tmpfs", mountTmpfs},
		{"loop ext4 image", mountLoopExt4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			tt.mount(t, ws)
			write := func(name, data string, mode os.FileMode) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(ws, name), []byte(data), mode); err != nil {
					t.Fatal(err)
				}
			}
			write("api.txt", "a\n", 0o644)
			if err := os.Mkdir(filepath.Join(ws, "apidir"), 0o755); err != nil {
				t.Fatal(err)
			}
			write("apidir/x", "x\n", 0o600)
			r := DefaultIDRange
			in := startInit(t, Config{Workspace: ws, UserNS: &r})
			got := run(t, in, "", "sh", "-c", `stat -c "%u %g %a %n" api.txt apidir apidir/x &&
				echo b >> api.txt && echo y >> apidir/x && mkdir made && echo m > made/f &&
				chmod 640 made/f && rm apidir/x && touch apidir/y`)
			wantStdout("0 0 644 api.txt\n0 0 755 apidir\n0 0 600 apidir/x\n")(t, got)
			if got.status.Code != 0 {
				t.Fatalf("writing inside failed: %v %q", got.status, got.stderr)
			}
			wantFile(t, filepath.Join(ws, "api.txt"), "a\nb\n", 0o644)
			wantFile(t, filepath.Join(ws, "made/f"), "m\n", 0o640)
			wantFile(t, filepath.Join(ws, "made"), "", os.ModeDir|0o755)
			wantFile(t, filepath.Join(ws, "apidir/y"), "", 0o644)
			if _, err := os.Lstat(filepath.Join(ws, "apidir/x")); !os.IsNotExist(err) {
				t.Errorf("apidir/x removed inside is still there: %v", err)
			}
		})
	}
}

// wantFile checks that p is owned by root on disk, with mode and (for a file) data.
func wantFile(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != 0 || fi.Mode() != mode {
		t.Errorf("%s: owner %d:%d mode %v, want 0:0 %v", p, st.Uid, st.Gid, fi.Mode(), mode)
	}
	if fi.Mode().IsRegular() {
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Errorf("%s holds %q, %v; want %q", p, b, err, data)
		}
	}
}

// mountTmpfs mounts a tmpfs at dir until the test ends.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unmount(t, dir) })
}

// mountLoopExt4 mounts a fresh 32 MiB ext4 image at dir (a loop device made on
// demand and released at the unmount) until the test ends.
func mountLoopExt4(t *testing.T, dir string) {
	t.Helper()
	mountLoopExt4Image(t, dir)
	t.Cleanup(func() { unmount(t, dir) })
}

// mountLoopExt4Image mounts a fresh 32 MiB ext4 image at dir; the caller unmounts it.
func mountLoopExt4Image(t *testing.T, dir string) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "ws.img")
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(32 << 20)
		_ = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 (from e2fsprogs) is needed for this test: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a loop device: %v %s", err, out)
	}
}

func unmount(t *testing.T, dir string) {
	if err := unix.Unmount(dir, 0); err != nil {
		t.Errorf("unmount %s: %v", dir, err)
	}
}

// TestUserNSWorkspaceSymlink checks that a workspace swapped for a symlink (to /, say)
// is refused rather than idmapped into the sandbox.
func TestUserNSWorkspaceSymlink(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	r := DefaultIDRange
	in, err := Start(testCtx(t), Config{ID: "sb-link", Workspace: link, UserNS: &r})
	if err == nil {
		_ = in.Close()
	}
	if !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("Start on a symlinked workspace = %v, want ENOTDIR", err)
	}
}
