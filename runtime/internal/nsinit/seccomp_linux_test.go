package nsinit

import (
	"encoding/binary"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// filterCase is one syscall and the action the filter must take on it.
type filterCase struct {
	name string
	arch uint32
	nr   uint32
	arg0 uint64
	want uint32
}

// TestFilterDecisions runs the filter through a small BPF interpreter for every case
// the layout must get right, on this architecture's table.
func TestFilterDecisions(t *testing.T) {
	t.Parallel()
	prog, err := buildFilter()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		nosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	tests := []filterCase{
		{"read", auditArch, unix.SYS_READ, 0, allow},
		{"write", auditArch, unix.SYS_WRITE, 0, allow},
		{"execve", auditArch, unix.SYS_EXECVE, 0, allow},
		{"fork-like clone", auditArch, unix.SYS_CLONE, uint64(unix.SIGCHLD), allow},
		{"thread clone", auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, allow},
		{"clone new user ns", auditArch, unix.SYS_CLONE, unix.CLONE_NEWUSER, eperm},
		{"clone new net ns", auditArch, unix.SYS_CLONE, unix.CLONE_NEWNET | uint64(unix.SIGCHLD), eperm},
		{"clone3", auditArch, unix.SYS_CLONE3, 0, nosys},
		{"foreign arch", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, kill},
	}
	for _, nr := range append(append([]uint32{}, commonDenied...), archDenied...) {
		tests = append(tests, filterCase{"denied " + strconv.Itoa(int(nr)), auditArch, nr, 0, eperm})
	}
	if x32Bit != 0 {
		tests = append(tests, filterCase{"x32 read", auditArch, x32Bit | unix.SYS_READ, 0, eperm})
	}
	thread, err := buildThreadFilter()
	if err != nil {
		t.Fatal(err)
	}
	child := childFilter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := runBPF(t, prog, tt.nr, tt.arch, tt.arg0); got != tt.want {
				t.Fatalf("filter(%#x, nr %d, arg0 %#x) = %#x, want %#x", tt.arch, tt.nr, tt.arg0, got, tt.want)
			}
			// The own spawn path: the spawner thread's program allows clone3 and nothing
			// else more; with the child's added, the kernel's answer (the most
			// restrictive, the lowest action) is the same as the full program's.
			th := runBPF(t, thread, tt.nr, tt.arch, tt.arg0)
			if want := tt.want; tt.nr == unix.SYS_CLONE3 && tt.arch == auditArch {
				if th != allow {
					t.Fatalf("thread filter(clone3) = %#x, want allow", th)
				}
			} else if th != want {
				t.Fatalf("thread filter(%#x, nr %d, arg0 %#x) = %#x, want %#x", tt.arch, tt.nr, tt.arg0, th, want)
			}
			// The kernel compares actions as signed (KILL_PROCESS is the lowest).
			if got := uint32(min(int32(th), int32(runBPF(t, child, tt.nr, tt.arch, tt.arg0)))); got != tt.want {
				t.Fatalf("thread and child filters(%#x, nr %d, arg0 %#x) = %#x, want %#x", tt.arch, tt.nr, tt.arg0, got, tt.want)
			}
		})
	}
}

// runBPF interprets the classic BPF subset the filter uses over a seccomp_data.
func runBPF(t *testing.T, prog []unix.SockFilter, nr, arch uint32, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += jumpBy(a == in.K, in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += jumpBy(a >= in.K, in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += jumpBy(a&in.K != 0, in)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the filter ran off its end")
	return 0
}

func jumpBy(cond bool, in unix.SockFilter) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}
