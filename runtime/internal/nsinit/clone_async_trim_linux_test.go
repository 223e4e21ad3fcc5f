//go:build linux && cgo && amd64

package nsinit

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSlotsGiveBackPages starts async spawns on slots of the test process's own (as
// the init does, on its own thread) and checks giveBack: a free slot's pages go back
// to the kernel; a slot whose child failed before its exec keeps them until the
// reaper has read the failure from its control page, and a slot the spawner has
// claimed until it is done with it.
func TestSlotsGiveBackPages(t *testing.T) {
	t.Parallel()
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true:", err)
	}
	tests := []struct {
		name  string
		dir   string
		errno syscall.Errno // of the failure the reaper reports, 0 for an exec
	}{
		{"execed", "/", 0},
		{"failed before its exec", "/no/such/dir", unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			fd := null.Fd()
			// The test gives back itself: the slots' own trim does nothing here.
			s := asyncSlots{quiet: afterQuiet(func() {})}
			attr := &syscall.ProcAttr{Dir: tt.dir, Files: []uintptr{fd, fd, fd}, Sys: &syscall.SysProcAttr{}}
			pid, ok, err := s.start(truePath, []string{"true"}, attr, -1, -1, nil, false)
			if err != nil || !ok {
				t.Fatalf("start: %v, %v", ok, err)
			}
			var ws unix.WaitStatus
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
				t.Fatal(err)
			}
			sl := s.all[0]
			if tt.errno != 0 {
				// The child has exited but is not reaped yet: its slot is busy.
				s.giveBack()
				if resident(t, sl) == 0 {
					t.Fatal("a slot whose failure is not yet reported gave back its pages")
				}
				if _, failed := s.reaped(pid); !errors.Is(failed, tt.errno) {
					t.Fatalf("reaped after giveBack: %v, want %v", failed, tt.errno)
				}
			} else if ws.ExitStatus() != 0 {
				t.Fatalf("true ended with %v", ws)
			}
			if _, failed := s.reaped(pid); failed != nil {
				t.Fatalf("reaped: %v", failed)
			}
			if resident(t, sl) == 0 {
				t.Fatal("the slot held no page after its child ran: nothing to give back")
			}
			s.giveBack()
			if n := resident(t, sl); n != 0 {
				t.Fatalf("the free slot still holds %d pages after giveBack", n)
			}
			// The slot is used again as if new.
			attr.Dir = "/"
			if pid, ok, err = s.start(truePath, []string{"true"}, attr, -1, -1, nil, false); err != nil || !ok {
				t.Fatalf("start again: %v, %v", ok, err)
			}
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
				t.Fatalf("true on a slot given back: %v, %v", ws, err)
			}
			if _, failed := s.reaped(pid); failed != nil || len(s.all) != 1 {
				t.Fatalf("reaped: %v; %d slots, want 1", failed, len(s.all))
			}
			// A slot get handed to the spawner is its own until start is done with it: a
			// trim that comes meanwhile leaves it.
			if resident(t, sl) == 0 {
				t.Fatal("the slot held no page after its second child ran")
			}
			if s.get() != sl {
				t.Fatal("get did not hand out the free slot")
			}
			s.giveBack()
			if resident(t, sl) == 0 {
				t.Fatal("a trim gave back the pages of a slot the spawner had claimed")
			}
			s.mu.Lock()
			sl.claimed = false
			s.mu.Unlock()
			s.giveBack()
			if n := resident(t, sl); n != 0 {
				t.Fatalf("the free slot still holds %d pages after giveBack", n)
			}
		})
	}
}

// resident counts the resident pages of a slot's stack and control page.
func resident(t *testing.T, sl *asyncSlot) int {
	t.Helper()
	mem := sl.mem[slotGuard:]
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatal("mincore:", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
