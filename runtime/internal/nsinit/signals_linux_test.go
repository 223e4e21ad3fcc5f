package nsinit

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestInheritedIgnoredSignalsCleared starts inits, on both spawn paths, from a server
// that ignores signal 32 (one of libc's own, which Go leaves alone in a cgo binary, as
// a CI runner's shell passed it down once): their processes ignore no signal. Not
// parallel: the disposition is the whole test process's while the inits start.
func TestInheritedIgnoredSignalsCleared(t *testing.T) {
	skipForced(t)
	const sig = 32
	var old kernelSigaction
	ign := kernelSigaction{handler: sigIgn}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&ign)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("failed to ignore signal %d: %v", sig, e)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
		}
	}
	defer restore()
	var inits []*Init
	for _, fork := range []bool{false, true} {
		if !fork && !cloneBuilt {
			continue
		}
		inits = append(inits, startInit(t, Config{ForceFork: fork}))
	}
	restore()
	for _, in := range inits {
		t.Run(in.SpawnPath().String(), func(t *testing.T) {
			res := run(t, in, "", "cat", "/proc/self/status")
			for _, l := range strings.Split(res.stdout, "\n") {
				if v, ok := strings.CutPrefix(l, "SigIgn:\t"); ok {
					if n, err := strconv.ParseUint(v, 16, 64); err != nil || n != 0 {
						t.Fatalf("SigIgn %q (%v), want none ignored", v, err)
					}
					return
				}
			}
			t.Fatalf("no SigIgn line in %q (%q)", res.stdout, res.stderr)
		})
	}
}

// TestInitLeavesChildSignalDefault checks that the init does not catch SIGCHLD (a
// signal delivered per exit, for nothing: see uncatchChildSignal), and that its exits
// are still reported without it.
func TestInitLeavesChildSignalDefault(t *testing.T) {
	for _, fork := range []bool{false, true} {
		if !fork && !cloneBuilt {
			continue
		}
		in := startInit(t, Config{ForceFork: fork})
		t.Run(in.SpawnPath().String(), func(t *testing.T) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID()) + "/status")
			if err != nil {
				t.Fatal(err)
			}
			var caught uint64
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "SigCgt:\t"); ok {
					if caught, err = strconv.ParseUint(v, 16, 64); err != nil {
						t.Fatal(err)
					}
				}
			}
			if caught == 0 {
				t.Fatalf("no SigCgt in %q", b)
			}
			if bit := uint64(1) << (unix.SIGCHLD - 1); caught&bit != 0 {
				t.Fatalf("SigCgt %#x: the init catches SIGCHLD", caught)
			}
			if caught&(1<<(unix.SIGTERM-1)) == 0 {
				t.Fatalf("SigCgt %#x: the init no longer catches SIGTERM", caught)
			}
			// Exits are still seen (orphans too: TestOrphansReaped).
			if res := run(t, in, "", "sh", "-c", "exit 3"); res.status.Code != 3 {
				t.Fatalf("exit status %+v, want code 3 (%q)", res.status, res.stderr)
			}
		})
	}
}
