package nsinit

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilterActionCache checks the filters against the kernel's action cache (Linux
// 5.11+, kernel/seccomp.c: seccomp_cache_prepare). When a filter is attached the
// kernel emulates it once per syscall number of the native architecture, knowing only
// the number and the architecture; a number whose emulation reaches ret ALLOW without
// loading anything else (an argument, the instruction pointer) is allowed from then on
// without running any filter. The cache of a task is that of all its filters at once,
// so a number is cached only if every filter of the chain allows it so.
//
// Every syscall the program allows must be cached except clone, whose answer depends
// on its flags (caching it would let a namespace clone through): on the own spawn path
// too, where a sandbox process carries the spawner thread's program and the child's.
func TestFilterActionCache(t *testing.T) {
	t.Parallel()
	full, err := buildFilter()
	if err != nil {
		t.Fatal(err)
	}
	thread, err := buildThreadFilter()
	if err != nil {
		t.Fatal(err)
	}
	chains := []struct {
		name    string
		filters [][]unix.SockFilter
	}{
		{"fallback path", [][]unix.SockFilter{full}},
		{"own spawn path", [][]unix.SockFilter{thread, childFilter()}},
	}
	const maxNr = 1024 // beyond x86-64's and arm64's syscall tables
	for _, c := range chains {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cached, allowed := 0, 0
			for nr := uint32(0); nr < maxNr; nr++ {
				verdict := uint32(unix.SECCOMP_RET_ALLOW)
				isCached := true
				for _, f := range c.filters {
					verdict = uint32(min(int32(verdict), int32(runBPF(t, f, nr, auditArch, 0))))
					isCached = isCached && constAllow(t, f, nr, auditArch)
				}
				if isCached && verdict != unix.SECCOMP_RET_ALLOW {
					t.Fatalf("nr %d: cached as allowed, but the filters answer %#x", nr, verdict)
				}
				switch {
				case nr == unix.SYS_CLONE && isCached:
					t.Fatalf("clone is cached as allowed: its flags would go unchecked")
				case nr != unix.SYS_CLONE && verdict == unix.SECCOMP_RET_ALLOW && !isCached:
					t.Errorf("nr %d is allowed but not cached: every syscall of its task runs the filters", nr)
				}
				if verdict == unix.SECCOMP_RET_ALLOW {
					allowed++
				}
				if isCached {
					cached++
				}
			}
			t.Logf("%d of %d syscall numbers allowed, %d of them cached", allowed, maxNr, cached)
		})
	}
}

// constAllow is the kernel's seccomp_is_const_allow: it runs prog knowing only nr and
// arch, and reports whether it reaches ret ALLOW without needing anything else.
func constAllow(t *testing.T, prog []unix.SockFilter, nr, arch uint32) bool {
	t.Helper()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch in.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			default:
				return false // not known at attach time
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K == unix.SECCOMP_RET_ALLOW
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += jumpBy(a == in.K, in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += jumpBy(a >= in.K, in)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			pc += jumpBy(a > in.K, in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += jumpBy(a&in.K != 0, in)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		default:
			return false // the kernel gives up on any other instruction
		}
	}
	t.Fatal("the filter ran off its end")
	return false
}
