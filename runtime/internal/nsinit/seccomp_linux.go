package nsinit

import (
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is a short allow-by-default program that refuses, with EPERM, the
// syscalls a sandbox never needs. It is written here with x/sys/unix rather than taken
// from a library (elastic/go-seccomp-bpf would do, libseccomp needs cgo) because it is
// a static list of some forty comparisons, readable in one screen and tested by running
// the denied calls in a sandbox, and a dependency would weigh more than it.
//
// Layout (jumps only go forward, as BPF requires):
//
//	ld arch; jeq native → 1; ret KILL_PROCESS     (a foreign ABI could dodge the list)
//	ld nr;   [x86-64: jge X32 bit → deny]
//	jeq <denied nr> → deny                       (one per entry of deniedSyscalls)
//	jeq clone3 → nosys                           (its flags sit behind a pointer; libc falls back to clone)
//	jeq clone → clone; ret ALLOW
//	clone: ld args[0] (low word); jset namespace flags → deny; ret ALLOW
//	deny: ret ERRNO(EPERM); nosys: ret ERRNO(ENOSYS)
//
// On the init's own spawn path (clone_linux.go) the spawner thread, which must call
// clone3 to clone into a cgroup, carries the same program with clone3 allowed (its
// jeq clone3 jumps to ret ALLOW), and each child, before it execs, adds childFilter:
//
//	ld nr; jeq clone3 → nosys; ret ALLOW; nosys: ret ERRNO(ENOSYS)
//
// Each program loads only the syscall number and the architecture before it answers,
// except on clone, so the kernel's action cache (Linux 5.11+: at attach it emulates a
// filter per syscall number, knowing only those two) allows every other permitted
// syscall without running the filters (TestFilterActionCache). A load of an argument
// or of the instruction pointer ahead of the number's dispatch would lose that for
// every syscall. Measured: a syscall-heavy dd takes 1.06-1.11x the CPU in a sandbox.
//
// The kernel runs every filter of a task and takes the most restrictive answer, so a
// sandbox process sees exactly the program above. Installing the whole program in each
// child instead cost about a fifth of a spawn of true (BenchmarkSpawn: the kernel
// checks, JIT-compiles and pre-evaluates each new filter for every syscall number); the
// long program is shared by inheritance as on the fallback path. The four instructions
// still cost each child about 25-45 µs of CPU on a 2-vCPU VM, 5-8% of what `true` costs
// in all (BenchmarkTrueCPU, with and without them): the kernel allocates, JIT-compiles
// and pre-evaluates even a filter this small, and frees it through a workqueue when the
// child exits. That is most of what `true` costs more in a sandbox than outside: without
// them a sandbox's `true` took 0.96-1.01x the CPU of a raw os/exec's, with them
// 1.01-1.07x. They stay while the spawner clones with clone3: a child's filters are its
// parent thread's and its own, and nothing a filter can read (the number, the
// arguments, the instruction pointer) tells the spawner's clone3 from one a sandbox
// process makes, so no filter of the spawner's can allow the one and refuse the other.

// seccomp_data offsets (linux/seccomp.h).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on a little-endian machine
)

// cloneNewNamespaces are the clone flags that would make a namespace.
const cloneNewNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// buildFilter assembles the program described above for the native architecture.
func buildFilter() ([]unix.SockFilter, error) { return assembleFilter(false) }

// buildThreadFilter assembles the program for the spawner thread of the own spawn
// path: the same with clone3 allowed.
func buildThreadFilter() ([]unix.SockFilter, error) { return assembleFilter(true) }

// childFilter is the program each child of the own spawn path adds before it execs:
// clone3 fails with ENOSYS, as the full program has it.
func childFilter() []unix.SockFilter {
	return []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_CLONE3, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)),
	}
}

// assembleFilter assembles the program, with clone3 allowed if allowClone3.
func assembleFilter(allowClone3 bool) ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("failed to build the seccomp filter: no syscall table for %s", goruntime.GOARCH)
	}
	denied := append(append([]uint32{}, commonDenied...), archDenied...)
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	// The tail, from the clone block on: ld arg0, jset, ret allow, deny, nosys.
	var p []unix.SockFilter
	p = append(p,
		stmt(ld, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, unix.SECCOMP_RET_KILL_PROCESS),
		stmt(ld, offNr),
	)
	// Every jump below targets deny or nosys; their distance from instruction i is
	// known once the number of comparisons is: after them come jeq clone3, jeq clone,
	// ret allow, then the clone block (3), deny, nosys.
	checks := len(denied)
	if x32Bit != 0 {
		checks++
	}
	start := len(p)
	denyAt := start + checks + 3 + 3
	nosysAt := denyAt + 1
	if denyAt-start > 255 {
		return nil, fmt.Errorf("failed to build the seccomp filter: %d syscalls is too many", len(denied))
	}
	to := func(target int) uint8 { return uint8(target - len(p) - 1) }
	if x32Bit != 0 {
		p = append(p, jump(jge, x32Bit, to(denyAt), 0))
	}
	for _, nr := range denied {
		p = append(p, jump(jeq, nr, to(denyAt), 0))
	}
	if allowClone3 {
		p = append(p, jump(jeq, unix.SYS_CLONE3, 1, 0)) // over jeq clone, onto ret ALLOW
	} else {
		p = append(p, jump(jeq, unix.SYS_CLONE3, to(nosysAt), 0))
	}
	p = append(p, jump(jeq, unix.SYS_CLONE, 1, 0))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ALLOW))
	p = append(p, stmt(ld, offArg0))
	p = append(p, jump(jset, cloneNewNamespaces, to(denyAt), 0))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ALLOW))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	if len(p) != nosysAt+1 {
		panic("nsinit: seccomp filter layout is wrong")
	}
	return p, nil
}

// installFilter loads prog on the calling thread only (no TSYNC): the init runs it on
// the locked thread that forks every sandbox process, which inherit it. The thread
// must already have no_new_privs.
func installFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	goruntime.KeepAlive(prog)
	if err != nil {
		return fmt.Errorf("failed to install the seccomp filter: %w", err)
	}
	return nil
}
