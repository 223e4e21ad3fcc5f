package nsinit

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMeasureUserNS reports what a user namespace costs, and the two ways of giving
// the sandbox's root its workspace: the idmapped mount (what Start does) against a
// chown on every write plus a recursive lchown to adopt a workspace. Like TestMeasure
// it only runs with NSINIT_MEASURE=1 (and takes NSINIT_MEASURE_BIN too):
//
//	NSINIT_MEASURE=1 go test -run TestMeasureUserNS -v ./runtime/internal/nsinit/
func TestMeasureUserNS(t *testing.T) {
	if os.Getenv("NSINIT_MEASURE") != "1" {
		t.Skip("set NSINIT_MEASURE=1 to measure")
	}
	if bin := os.Getenv("NSINIT_MEASURE_BIN"); bin != "" {
		initBinary = bin // as in TestMeasure
		t.Logf("init binary: %s", bin)
	}
	ctx := testCtx(t)
	ws := t.TempDir()
	r := DefaultIDRange
	var plain, userns, base []time.Duration
	for i := 0; i < 30; i++ {
		t0 := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		base = append(base, time.Since(t0))
		for _, c := range []struct {
			cfg Config
			d   *[]time.Duration
		}{{Config{ID: "sb-m", Workspace: ws}, &plain}, {Config{ID: "sb-m", Workspace: ws, UserNS: &r}, &userns}} {
			t0 := time.Now()
			in, err := Start(ctx, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			*c.d = append(*c.d, time.Since(t0))
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("Start p50: plain %v, userns with idmapped workspace %v (ratio %.2f); exec true %v (plain/exec %.2f, userns/exec %.2f)",
		p(plain, 50), p(userns, 50), ratio(p(userns, 50), p(plain, 50)), p(base, 50),
		ratio(p(plain, 50), p(base, 50)), ratio(p(userns, 50), p(base, 50)))

	// The server's part of the idmapped mount, alone: clone the workspace's mount and
	// idmap it through a live init's user namespace (attaching it inside is one
	// move_mount in the init).
	in := startInit(t, Config{Workspace: ws, UserNS: &r})
	nsfd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", in.PID()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(nsfd)
	var idmap []time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		tree, err := detachedTree(ws, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(nsfd)})
		idmap = append(idmap, time.Since(t0))
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.Close(tree)
	}
	t.Logf("idmapped tree p50 %v (p90 %v): %.1f%% of a plain Start", p(idmap, 50), p(idmap, 90),
		100*ratio(p(idmap, 50), p(plain, 50)))

	// The chown scheme: each files-API write gains an lchown; each activation of an
	// old workspace walks it with lchown (here 1000 files in 20 directories).
	data := make([]byte, 1024)
	var write, writeChown []time.Duration
	for i := 0; i < 200; i++ {
		f := filepath.Join(ws, "w"+strconv.Itoa(i))
		t0 := time.Now()
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		write = append(write, time.Since(t0))
		t0 = time.Now()
		if err := os.WriteFile(f+"c", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(f+"c", int(r.HostUID), int(r.HostGID)); err != nil {
			t.Fatal(err)
		}
		writeChown = append(writeChown, time.Since(t0))
	}
	t.Logf("1 KiB write p50 %v, with lchown %v (ratio %.2f)", p(write, 50), p(writeChown, 50),
		ratio(p(writeChown, 50), p(write, 50)))
	old := t.TempDir()
	for d := 0; d < 20; d++ {
		dir := filepath.Join(old, "d"+strconv.Itoa(d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var adopt []time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		err := filepath.WalkDir(old, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(r.HostUID)+i, int(r.HostGID)+i) // a real change each round
		})
		adopt = append(adopt, time.Since(t0))
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("adopting 1000 files by lchown p50 %v: %.2fx a plain Start, %.0fx the idmapped tree",
		p(adopt, 50), ratio(p(adopt, 50), p(plain, 50)), ratio(p(adopt, 50), p(idmap, 50)))
}
