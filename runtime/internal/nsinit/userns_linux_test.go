package nsinit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// userNSHelper runs the helper modes of the user namespace tests (see runHelper):
//
// creds: print the Uid, Gid, Groups and CapEff lines of /proc/self/status.
//
// write: try to open each argument for appending, printing "<path>: ok" or the error.
func userNSHelper(mode string) (int, bool) {
	switch mode {
	case "creds":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		}
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"Uid:", "Gid:", "Groups:", "CapEff:"} {
				if strings.HasPrefix(l, k) {
					fmt.Println(strings.Join(strings.Fields(l), " "))
				}
			}
		}
		return 0, true
	case "write":
		for _, p := range os.Args[1:] {
			fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
			if err != nil {
				fmt.Printf("%s: %v\n", p, err)
				continue
			}
			_ = unix.Close(fd)
			fmt.Printf("%s: ok\n", p)
		}
		return 0, true
	}
	return 0, false
}

// procStatus returns the fields of the lines of /proc/<pid>/status named by keys,
// "Uid: 0 0 0 0" style, one per line.
func procStatus(t *testing.T, pid int, keys ...string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, k := range keys {
			if strings.HasPrefix(l, k+":") {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestUserNSIDs checks the ids of sandbox processes inside and, through
// /proc/<host pid>/status, outside: root inside is HostUID outside, a Config.UID is
// shifted by it, and no supplementary group of the server's (gid 0) is left.
func TestUserNSIDs(t *testing.T) {
	t.Parallel()
	r := IDRange{HostUID: 200000, HostGID: 300000, Size: 65536}
	tests := []struct {
		name            string
		uid, gid        int
		inside, hostIDs string
	}{
		{"root", 0, 0, "0 0 0", "Uid: 200000 200000 200000 200000\nGid: 300000 300000 300000 300000\nGroups:"},
		{"uid 1000", 1000, 1001, "1000 1001 1001", "Uid: 201000 201000 201000 201000\nGid: 301001 301001 301001 301001\nGroups:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.Chmod(ws, 0o755); err != nil { // searchable by uid 1000 inside
				t.Fatal(err)
			}
			in := startInit(t, Config{Workspace: ws, UserNS: &r, UID: tt.uid, GID: tt.gid})
			wantStdout(tt.inside+"\n")(t, run(t, in, "", "sh", "-c", "echo $(id -u) $(id -g) $(id -G)"))
			if got := procStatus(t, in.PID(), "Uid", "Gid", "Groups"); got != "Uid: 200000 200000 200000 200000\nGid: 300000 300000 300000 300000\nGroups:" {
				t.Errorf("the init's ids on the host:\n%s", got)
			}
			ctx := testCtx(t)
			ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sleep", "1000"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := procStatus(t, ch.HostPID(), "Uid", "Gid", "Groups"); got != tt.hostIDs {
				t.Errorf("a process's ids on the host:\n%s\nwant\n%s", got, tt.hostIDs)
			}
			if err := ch.Signal(ctx, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if _, err := ch.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUserNSHostFiles checks that a host file seen inside is protected twice: by the
// read-only mount, and by its owner (the host's root, unmapped inside, so root inside
// is only "others" to it). The open for appending meets the permission check before
// the read-only one, which tells them apart: a file others may not write fails with
// EACCES, one they may write (0666) with EROFS. Without a user namespace root inside
// owns the first and gets EROFS. The Rootfs lives below a directory (a t.TempDir) that
// root inside may not even search, so this also checks that the server hands it over.
func TestUserNSHostFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{root, filepath.Join(root, "bin"), filepath.Join(root, "data")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", self, filepath.Join(root, "bin", "helper")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	copyLibs(t, self, root)
	for name, mode := range map[string]os.FileMode{"closed": 0o644, "open": 0o666} {
		p := filepath.Join(root, "data", name)
		if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"host ids": "/data/closed: read-only file system\n/data/open: read-only file system\n",
		"userns":   "/data/closed: permission denied\n/data/open: read-only file system\n",
	}
	forModes(t, Config{Rootfs: root}, func(t *testing.T, cfg Config) {
		in := startInit(t, cfg)
		name := "host ids"
		if cfg.UserNS != nil || os.Getenv("NSINIT_TEST_USERNS") == "1" { // see startInit
			name = "userns"
		}
		wantStdout(want[name])(t, runReq(t, in, "", SpawnRequest{
			Argv: []string{"/bin/helper", "/data/closed", "/data/open"}, Env: []string{helperEnv + "=write"}}))
	})
	t.Run("host root", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		if out, err := exec.Command("cp", self, filepath.Join(ws, "helper")).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		r := DefaultIDRange
		in := startInit(t, Config{Workspace: ws, UserNS: &r})
		// Opened, never written: the helper only tries the open.
		files := []string{"/etc/passwd", "/usr/bin/sh", "/proc/sys/kernel/core_pattern"}
		var want strings.Builder
		for _, f := range files {
			want.WriteString(f + ": permission denied\n")
		}
		wantStdout(want.String())(t, runReq(t, in, "", SpawnRequest{
			Argv: append([]string{"/workspace/helper"}, files...), Env: []string{helperEnv + "=write"}}))
	})
}

// TestUserNSSetuid runs a setuid-root program (this binary) from the workspace: it
// must not regain root or any capability, whoever runs it.
func TestUserNSSetuid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		uid  int
		want string
	}{
		{"as uid 1000", 1000, "Uid: 1000 1000 1000 1000\nGid: 1000 1000 1000 1000\nGroups:\nCapEff: 0000000000000000\n"},
		{"as root", 0, "Uid: 0 0 0 0\nGid: 0 0 0 0\nGroups:\nCapEff: 0000000000000000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.Chmod(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(ws, "creds")
			if out, err := exec.Command("cp", self, bin).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			if err := os.Chmod(bin, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
			r := DefaultIDRange
			in := startInit(t, Config{Workspace: ws, UserNS: &r, UID: tt.uid, GID: tt.uid})
			// The program is setuid root as the sandbox sees it.
			wantStdout("0 0 6755\n")(t, run(t, in, "", "stat", "-c", "%u %g %a", "/workspace/creds"))
			wantStdout(tt.want)(t, runReq(t, in, "", SpawnRequest{
				Argv: []string{"/workspace/creds"}, Env: []string{helperEnv + "=creds"}}))
		})
	}
}

// TestUserNSPTY checks that a PTY slave of the server's devpts (owned by the host's
// root, unmapped inside) still becomes the controlling terminal in a user namespace.
func TestUserNSPTY(t *testing.T) {
	t.Parallel()
	r := DefaultIDRange
	in := startInit(t, Config{UserNS: &r})
	ctx := testCtx(t)
	m, s := openPTY(t)
	ch, err := in.Spawn(ctx, SpawnRequest{TTY: s, Argv: []string{"sh", "-c",
		"exec 3</dev/tty && echo ctty-ok; read x; echo got-$x; exit 3"}})
	_ = s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write([]byte("abc\n")); err != nil {
		t.Fatal(err)
	}
	if out := readUntil(t, m, "got-abc"); !strings.Contains(out, "ctty-ok") {
		t.Fatalf("the PTY is not the controlling terminal: %q", out)
	}
	if st, err := ch.Wait(ctx); err != nil || st.Code != 3 {
		t.Fatalf("Wait = %v, %v; want exit status 3", st, err)
	}
}

// TestUserNSSupported checks the probe on a workspace filesystem that allows idmapped
// mounts and on one that does not.
func TestUserNSSupported(t *testing.T) {
	t.Parallel()
	if err := UserNSSupported(testCtx(t), t.TempDir()); err != nil {
		t.Fatalf("UserNSSupported on ext4: %v", err)
	}
	err := UserNSSupported(testCtx(t), "/proc/sys/kernel") // procfs: no idmapped mounts
	if !errors.Is(err, ErrNoUserNS) || !strings.Contains(err.Error(), "idmap") {
		t.Fatalf("UserNSSupported on procfs = %v, want ErrNoUserNS naming the idmap", err)
	}
}
