package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSetupReleasesHostMounts checks that a running init keeps nothing of a
// filesystem the server had mounted when it started: the server's unmount of a
// loop-mounted image lets the loop device go while the sandbox runs, with or without a
// user namespace. In a user namespace the detached old root used to stay whole for
// the init's life (reexec_linux.go), and the device with it. The config the init
// executed again was handed is not in its environment.
func TestSetupReleasesHostMounts(t *testing.T) {
	for _, userNS := range []bool{false, true} {
		t.Run("userns="+strconv.FormatBool(userNS), func(t *testing.T) {
			t.Parallel()
			cfg := Config{ID: "sb-oldroot"}
			if userNS {
				if err := UserNSSupported(testCtx(t), t.TempDir()); err != nil {
					t.Skipf("no user namespaces here: %v", err)
				}
				r := DefaultIDRange
				cfg.UserNS = &r
			}
			other := filepath.Join(t.TempDir(), "other")
			if err := os.Mkdir(other, 0o755); err != nil {
				t.Fatal(err)
			}
			mountLoopExt4Image(t, other)
			unmounted := false
			t.Cleanup(func() {
				if !unmounted {
					unmount(t, other)
				}
			})
			n := loopOf(t, other)
			in := startInit(t, cfg)
			if r := run(t, in, "", "/bin/sh", "-c", "echo ok"); strings.TrimSpace(r.stdout) != "ok" {
				t.Fatalf("the sandbox does not run a command after its setup: %+v", r)
			}
			// The state the init executed again was handed names host paths: it is not
			// in the environment, which the sandbox's processes can read.
			if environ, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID()) + "/environ"); err != nil || strings.Contains(string(environ), `"config"`) {
				t.Fatalf("the init's environment (err %v) holds its config: %q", err, environ)
			}
			if err := unix.Unmount(other, 0); err != nil {
				t.Fatalf("unmount the image: %v", err)
			}
			unmounted = true
			// The kernel clears the device right after the last user of its filesystem
			// went: generous for a loaded machine, far below the init's life (the test's).
			deadline := time.Now().Add(10 * time.Second)
			for loopBound(n) {
				if time.Now().After(deadline) {
					t.Fatalf("/dev/loop%d is still bound 10 s after the server unmounted its filesystem, while init %d runs", n, in.PID())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// loopOf returns the number of the loop device whose filesystem is mounted on dir.
func loopOf(t *testing.T, dir string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if unix.Major(st.Dev) != 7 {
		t.Fatalf("%s is not on a loop device (device %d:%d)", dir, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	return int(unix.Minor(st.Dev))
}

// loopBound reports whether /dev/loop<n> is still bound to a file.
func loopBound(n int) bool {
	b, err := os.ReadFile("/sys/block/loop" + strconv.Itoa(n) + "/loop/backing_file")
	return err == nil && len(b) > 0 || err != nil && !errors.Is(err, os.ErrNotExist)
}

// TestNeedsReexec checks when an init executes itself again: in a user namespace, on
// the host's entries, with a loop device's filesystem among the mounts it copied.
func TestNeedsReexec(t *testing.T) {
	const (
		plain = "22 27 0:21 / /proc rw,relatime - proc proc rw\n27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
		loop  = plain + "91 27 7:3 / /data/workspaces/a rw,nosuid - ext4 /dev/loop3 rw\n"
	)
	r := DefaultIDRange
	tests := []struct {
		name string
		cfg  Config
		info string
		want bool
	}{
		{"user namespace, loop mount", Config{UserNS: &r}, loop, true},
		{"user namespace, no loop mount", Config{UserNS: &r}, plain, false},
		{"user namespace, a mount of major 17", Config{UserNS: &r}, plain + "92 27 17:3 / /x rw - ext4 /dev/x rw\n", false},
		{"no user namespace", Config{}, loop, false},
		{"user namespace, a Rootfs", Config{UserNS: &r, Rootfs: "/srv/root"}, loop, false},
		{"empty mountinfo", Config{UserNS: &r}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsReexec(tt.cfg, hasLoopMount([]byte(tt.info))); got != tt.want {
				t.Fatalf("needsReexec = %v, want %v", got, tt.want)
			}
		})
	}
}
