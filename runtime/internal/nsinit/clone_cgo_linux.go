//go:build linux && cgo && amd64

package nsinit

/*
#include "clone_linux.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
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
// into procs if >= 0, with filter installed in the child. The child's arguments are
// laid out in w, which the spawner reuses for each spawn it waits for. It returns
// the pid and, with wantPidFD, its pidfd (else -1). A child that failed is reaped
// here, and its errno returned as ForkExec returns it.
func cloneSpawn(w *waitedArgs, argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, wantPidFD bool, filter *unix.SockFprog) (pid, pidfd int, err error) {
	defer w.done()
	n, p := cstringsSize(argv0, attr.Dir, argv, attr.Env)
	w.a = C.struct_sg_spawn{}
	m := w.args(n, p, len(attr.Files))
	fillSpawn(&w.a, &m, argv0, argv, attr, cgroup, procs, filter)
	if wantPidFD {
		w.a.want_pidfd = 1
	}
	pid = int(C.sg_spawn(&w.a))
	if pid < 0 {
		return 0, -1, cloneError(pid, cgroup)
	}
	if w.a.err == 0 {
		return pid, int(w.a.pidfd), nil
	}
	if wantPidFD {
		_ = unix.Close(int(w.a.pidfd))
	}
	_ = waitChild(pid)
	return 0, -1, childError(w.a.stage, w.a.err)
}

// waitedArgs is the memory a child the spawner waits for (CLONE_VFORK) reads: its
// struct sg_spawn and, in Go memory, its strings, pointer arrays and fds. The spawns
// are serialized on the spawner thread and each child has left the memory, by exec
// or exit, before clone3 returns, so one is enough, reused by every such spawn: grown
// to the largest spawn, and kept while that is at most maxKeptArgs. The spawner
// keeps it reachable, and Go's heap does not move objects, so the addresses the
// child reads hold across the call.
type waitedArgs struct {
	a    C.struct_sg_spawn
	buf  []byte
	ptrs []uint64
	fds  []int32
}

// maxKeptArgs bounds the bytes of strings waitedArgs keeps between spawns.
const maxKeptArgs = 64 << 10

// args returns w's memory, emptied, with room for n bytes of strings, p pointers
// and nfds fds.
func (w *waitedArgs) args(n, p, nfds int) spawnArgs {
	if cap(w.buf) < n {
		w.buf = make([]byte, 0, n)
	}
	if cap(w.ptrs) < p {
		w.ptrs = make([]uint64, 0, p)
	}
	if cap(w.fds) < nfds {
		w.fds = make([]int32, nfds)
	}
	return spawnArgs{b: cstrings{buf: w.buf[:0:n], ptrs: w.ptrs[:0:p]}, fds: w.fds[:nfds]}
}

// done lets go of a spawn's memory that grew past what is kept.
func (w *waitedArgs) done() {
	if cap(w.buf) > maxKeptArgs || cap(w.ptrs) > maxKeptArgs/8 || cap(w.fds) > maxKeptArgs/4 {
		w.buf, w.ptrs, w.fds = nil, nil, nil
	}
}

// spawnArgs is where fillSpawn lays out what a child reads besides its sg_spawn:
// room for the strings and pointer arrays (cstringsSize) and for the fds.
type spawnArgs struct {
	b   cstrings
	fds []int32
}

// fillSpawn sets the fields of a that say what the child does, from the arguments of
// cloneSpawn, laying out the strings and fds in m, which has room for them. The
// caller keeps m's memory alive (and unmoved) until the child has exec'd or exited.
// It allocates nothing.
func fillSpawn(a *C.struct_sg_spawn, m *spawnArgs, argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, filter *unix.SockFprog) {
	b := &m.b
	a.path, a.dir = C.uint64_t(b.add(argv0)), C.uint64_t(b.add(attr.Dir))
	a.argv, a.envp = C.uint64_t(b.list(argv)), C.uint64_t(b.list(attr.Env))
	fds := m.fds[:len(attr.Files)]
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
// the child in two buffers, each made with room for all of a spawn's
// (cstringsSize), so they never move once an address into them is taken: Go memory
// the caller keeps alive (Go's heap does not move objects), or an async slot's own.
type cstrings struct {
	buf  []byte
	ptrs []uint64
}

// cstringsSize returns the bytes and pointers the given strings and lists take: each
// string with its NUL, each list with its NULL.
func cstringsSize(path, dir string, lists ...[]string) (n, p int) {
	n = len(path) + 1 + len(dir) + 1
	for _, l := range lists {
		for _, s := range l {
			n += len(s) + 1
		}
		p += len(l) + 1
	}
	return n, p
}

// newCStrings returns cstrings in new buffers sized for the given strings and lists.
func newCStrings(path, dir string, lists ...[]string) *cstrings {
	n, p := cstringsSize(path, dir, lists...)
	return &cstrings{buf: make([]byte, 0, n), ptrs: make([]uint64, 0, p)}
}

// add appends s and returns its address.
func (b *cstrings) add(s string) uint64 {
	at := len(b.buf)
	if at+len(s)+1 > cap(b.buf) {
		panic("nsinit: cstrings sized too small") // cstringsSize counted every string
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

// str returns a copy of the NUL-terminated string at addr in b's buffer, or "" if
// addr is not in it.
func (b *cstrings) str(addr uint64) string {
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.buf))))
	if addr < base || addr >= base+uint64(len(b.buf)) {
		return ""
	}
	s := b.buf[addr-base:]
	if end := bytes.IndexByte(s, 0); end >= 0 {
		s = s[:end]
	}
	return string(s)
}

// strs returns copies of the strings of the NULL-terminated array at addr in b's
// pointer buffer.
func (b *cstrings) strs(addr uint64) []string {
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.ptrs))))
	if addr < base || addr >= base+8*uint64(len(b.ptrs)) {
		return nil
	}
	var out []string
	for _, p := range b.ptrs[(addr-base)/8:] {
		if p == 0 {
			break
		}
		out = append(out, b.str(p))
	}
	return out
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
