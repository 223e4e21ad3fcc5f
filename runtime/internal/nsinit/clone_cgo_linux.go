//go:build linux && cgo && amd64

package nsinit

/*
#include "clone_linux.h"
*/
import "C"

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cloneBuilt says this build has the init's own spawn path (clone_linux_amd64.c).
const cloneBuilt = true

// cloneStages names the step of the child that failed (SG_STAGE_), for errors that
// are not the exec's own.
var cloneStages = map[int32]string{
	C.SG_STAGE_SECCOMP: "install the seccomp filter",
	C.SG_STAGE_CGROUP:  "enter the process's cgroup",
	C.SG_STAGE_SESSION: "start a session or process group",
	C.SG_STAGE_CRED:    "set the process's ids",
	C.SG_STAGE_CHDIR:   "change to the working directory",
	C.SG_STAGE_FDS:     "set up the process's fds",
	C.SG_STAGE_CTTY:    "set the controlling terminal",
}

// probeClone tries the own spawn path once with a child that exits at once: into the
// cgroup2 directory cgroupDir (if >= 0), then, if that fails, without it. The kernel
// refuses the group with EBADF for a v1 directory and EACCES or EPERM where the init
// may not write it (a user namespace the group was not delegated to), and a kernel
// before 5.7 refuses CLONE_INTO_CGROUP itself (EINVAL or E2BIG). It reports whether
// clones may go into a cgroup, or an error if clone3 with CLONE_VM, CLONE_VFORK,
// CLONE_CLEAR_SIGHAND and CLONE_PIDFD is unavailable (before Linux 5.5, or a seccomp
// filter of the host's that refuses clone3).
func probeClone(cgroupDir int) (into bool, err error) {
	try := func(cg int) error {
		a := C.struct_sg_spawn{cgroup: C.int32_t(cg), procs: -1, want_pidfd: 1}
		pid := int(C.sg_probe(&a))
		if pid < 0 {
			return syscall.Errno(-pid)
		}
		_ = unix.Close(int(a.pidfd))
		return waitChild(pid)
	}
	if cgroupDir >= 0 && try(cgroupDir) == nil {
		return true, nil
	}
	if err := try(-1); err != nil {
		return false, fmt.Errorf("failed to clone3: %w", err)
	}
	return false, nil
}

// cloneSpawn starts argv0 as attr says (the fields procAttr sets) on the own spawn
// path: cloned into the cgroup2 directory cgroup if >= 0, else made to write itself
// into procs if >= 0, with filter installed in the child. It returns the pid and,
// with wantPidFD, its pidfd (else -1). A child that failed is reaped here, and its
// errno returned as ForkExec returns it.
func cloneSpawn(argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, wantPidFD bool, filter *unix.SockFprog) (pid, pidfd int, err error) {
	var a C.struct_sg_spawn
	b, fds := fillSpawn(&a, argv0, argv, attr, cgroup, procs, filter)
	if wantPidFD {
		a.want_pidfd = 1
	}
	pid = int(C.sg_spawn(&a))
	goruntime.KeepAlive(b)
	goruntime.KeepAlive(fds)
	goruntime.KeepAlive(filter)
	if pid < 0 {
		return 0, -1, cloneError(pid, cgroup)
	}
	if a.err == 0 {
		return pid, int(a.pidfd), nil
	}
	if wantPidFD {
		_ = unix.Close(int(a.pidfd))
	}
	_ = waitChild(pid)
	return 0, -1, childError(a.stage, a.err)
}

// fillSpawn sets the fields of a that say what the child does, from the arguments of
// cloneSpawn, and returns the Go memory a points into: the caller keeps it alive
// (and unmoved) until the child has exec'd or exited.
func fillSpawn(a *C.struct_sg_spawn, argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, filter *unix.SockFprog) (*cstrings, []int32) {
	b := newCStrings(argv0, attr.Dir, argv, attr.Env)
	a.path, a.dir = C.uint64_t(b.add(argv0)), C.uint64_t(b.add(attr.Dir))
	a.argv, a.envp = C.uint64_t(b.list(argv)), C.uint64_t(b.list(attr.Env))
	fds := make([]int32, len(attr.Files))
	for i, f := range attr.Files {
		fds[i] = int32(f)
	}
	a.nfds, a.cgroup, a.procs, a.pidfd = C.int32_t(len(fds)), C.int32_t(cgroup), C.int32_t(procs), -1
	if len(fds) > 0 {
		a.fds = C.uint64_t(uintptr(unsafe.Pointer(&fds[0])))
	}
	if filter != nil {
		a.filter = C.uint64_t(uintptr(unsafe.Pointer(filter)))
	}
	if sys := attr.Sys; sys != nil {
		if sys.Setsid {
			a.setsid = 1
		}
		if sys.Setctty {
			a.ctty = 1
		}
		if c := sys.Credential; c != nil {
			a.cred, a.uid, a.gid = 1, C.uint32_t(c.Uid), C.uint32_t(c.Gid)
		}
	}
	return b, fds
}

// cloneError is the error of a clone3 that returned -errno (no child was made).
func cloneError(ret, cgroup int) error {
	errno := syscall.Errno(-ret)
	if cgroup >= 0 && (errno == unix.EACCES || errno == unix.EPERM || errno == unix.EBADF) {
		return fmt.Errorf("failed to clone3: %w: %w", errCloneInto, errno)
	}
	return fmt.Errorf("failed to clone3: %w", errno)
}

// childError is the error of a child that failed at stage with errno: the exec's own
// as ForkExec returns it, or the step before it that failed.
func childError(stage, errno C.int32_t) error {
	if what, ok := cloneStages[int32(stage)]; ok {
		return fmt.Errorf("failed to %s: %w", what, syscall.Errno(errno))
	}
	return syscall.Errno(errno)
}

// cstrings lays out NUL-terminated strings and NULL-terminated pointer arrays for
// the child in one Go buffer, which the caller keeps alive across the spawn. Both
// are made at their final size (newCStrings), so they never move once an address
// into them is taken (Go's heap does not move objects), and a spawn's strings cost
// two allocations rather than one per growth of each.
type cstrings struct {
	buf  []byte
	ptrs []uint64
}

// newCStrings sizes the buffers for the given strings and lists: each string with
// its NUL, each list with its NULL.
func newCStrings(path, dir string, lists ...[]string) *cstrings {
	n, p := len(path)+1+len(dir)+1, 0
	for _, l := range lists {
		for _, s := range l {
			n += len(s) + 1
		}
		p += len(l) + 1
	}
	return &cstrings{buf: make([]byte, 0, n), ptrs: make([]uint64, 0, p)}
}

// add appends s and returns its address.
func (b *cstrings) add(s string) uint64 {
	at := len(b.buf)
	if at+len(s)+1 > cap(b.buf) {
		panic("nsinit: cstrings sized too small") // newCStrings counted every string
	}
	b.buf = append(append(b.buf, s...), 0)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.buf))) + uintptr(at))
}

// list appends each string of ss and the pointer array to them, and returns the
// array's address.
func (b *cstrings) list(ss []string) uint64 {
	start := len(b.ptrs)
	if start+len(ss)+1 > cap(b.ptrs) {
		panic("nsinit: cstrings sized too small")
	}
	for _, s := range ss {
		b.ptrs = append(b.ptrs, b.add(s))
	}
	b.ptrs = append(b.ptrs, 0) // the array's NULL
	return uint64(uintptr(unsafe.Pointer(&b.ptrs[start])))
}

// waitChild reaps pid and returns an error unless it exited 0.
func waitChild(pid int) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if !ws.Exited() || ws.ExitStatus() != 0 {
			return fmt.Errorf("child ended with %v", ws)
		}
		return nil
	}
}
