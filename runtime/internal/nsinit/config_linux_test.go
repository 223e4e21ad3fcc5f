package nsinit

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNetworks checks the two other network modes.
func TestNetworks(t *testing.T) {
	t.Parallel()
	t.Run("none leaves lo down", func(t *testing.T) {
		t.Parallel()
		in := startInit(t, Config{Network: NetworkNone})
		wantStderr("Network is unreachable")(t, run(t, in, "", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9"))
	})
	t.Run("host shares the host's", func(t *testing.T) {
		t.Parallel()
		in := startInit(t, Config{Network: NetworkHost})
		ours, _ := os.Readlink("/proc/self/ns/net")
		if theirs := nsOfKind(t, in.PID(), "net"); theirs != ours {
			t.Fatalf("the init's net namespace is %s, want the host's %s", theirs, ours)
		}
	})
}

// TestUID checks that a configured uid and gid apply to spawned processes.
func TestUID(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{UID: 65534, GID: 65534})
	wantStdout("65534 65534 65534\n")(t, run(t, in, "", "sh", "-c", "echo $(id -u) $(id -g) $(id -G)"))
}

// TestSpawnErrors checks failures that must come back as errors, not hangs.
func TestSpawnErrors(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	if _, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"no-such-command"}}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown command: %v, want ErrNotExist", err)
	}
	if _, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}, Dir: "/no/such/dir"}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v, want ErrNotExist", err)
	}
	if _, err := in.Spawn(ctx, SpawnRequest{}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty argv: %v, want ErrInvalidRequest", err)
	}
	if _, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}, Env: []string{strings.Repeat("x", maxSpill)}}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("huge env: %v, want ErrFrameTooLarge", err)
	}
	// The init still works after all that.
	wantStdout("ok\n")(t, run(t, in, "", "echo", "ok"))
	if _, err := Start(ctx, Config{ID: "x", Workspace: filepath.Join(t.TempDir(), "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start with a missing workspace: %v, want ErrNotExist", err)
	}
}

// TestNoHostMounts checks that the init's mounts stay in its mount namespace.
func TestNoHostMounts(t *testing.T) {
	t.Parallel()
	before := mountPoints(t)
	in := startInit(t, Config{})
	wantStdout("ok\n")(t, run(t, in, "", "echo", "ok"))
	// Other tests on this machine may mount things meanwhile: look for ours only (the
	// init stages its root on /tmp).
	ours := map[string]bool{"/workspace": true, "/proc/sys": true}
	for _, e := range append([]string{"", "proc", "tmp", "dev", "workspace"}, hostEntries...) {
		ours[filepath.Join(staging, e)] = true
	}
	for p := range mountPoints(t) {
		if !before[p] && ours[p] {
			t.Errorf("the sandbox's mount %s is visible on the host", p)
		}
	}
}

func mountPoints(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 {
			out[fs[4]] = true
		}
	}
	return out
}

// TestRootfs builds a root from a directory of our own: only its entries exist.
func TestRootfs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// This test binary is the only program (with its shared libraries, if any: under
	// -race it has some); it lists / inside.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", self, filepath.Join(bin, "helper")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	copyLibs(t, self, root)
	if err := os.WriteFile(filepath.Join(root, "marker"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := startInit(t, Config{Rootfs: root})
	r := runReq(t, in, "", SpawnRequest{Argv: []string{"/bin/helper"}, Env: []string{helperEnv + "=ls"}})
	names := []string{"dev", "proc", "tmp", "workspace"}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := strings.Join(names, " ") + "\nmine"
	if r.stdout != want || r.status.Code != 0 {
		t.Fatalf("the root holds %q (%q, %v), want %q", r.stdout, r.stderr, r.status, want)
	}
}

// copyLibs copies the shared libraries and loader of bin (as ldd lists them) to the
// same paths under root.
func copyLibs(t *testing.T, bin, root string) {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		return // not a dynamic executable
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if !strings.HasPrefix(f, "/") {
				continue
			}
			dst := filepath.Join(root, f)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-L", f, dst).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
		}
	}
}
