//go:build linux && cgo && amd64

package nsinit

/*
#include "clone_linux.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asyncSlot is the memory of one spawn the spawner does not wait for (see
// asyncSlots). A slot get handed to the spawner (claimed) is the spawner's own until
// start marks it busy or frees it; claimed, busy, used, pid and a busy slot's other
// fields are used under asyncSlots.mu.
//
// Everything the child reads is in the slot's own memory, outside Go's heap: a spawn
// on a slot allocates nothing, and pins nothing (pinning an object makes the Go
// runtime allocate bits for its span that only a collection frees).
type asyncSlot struct {
	mem     []byte             // guard | stack | control page | args; mapped once, never unmapped
	claimed bool               // get handed it to the spawner, which is starting a child on it
	used    bool               // a child ran on the slot since its pages were last given back
	a       *C.struct_sg_spawn // in the control page
	tid     *uint32            // in the control page: nonzero while the child may use the slot
	b       cstrings           // the child's strings and pointer arrays, in the args area
	pid     int                // the child, while busy
	busy    bool               // a child was started on the slot and it is not yet free
	// cached says the spawn's path came from the PATH cache: a child that found no
	// file there makes the reaper forget the cache's entry.
	cached bool
}

// asyncSlots are the slots of the async spawns: a spawn that needs no answer
// (SpawnRequest.NoWait) is cloned with CLONE_VM but without CLONE_VFORK, on a stack of
// its own, so the spawner does not wait for the child's exec (a wait that made every
// spawn of the sandbox queue behind the one before: see the package doc, "Spawning").
// A slot is free again once the kernel cleared its tid (CLONE_CHILD_CLEARTID: at the
// child's exec or exit) and, if the child failed before its exec, the reaper has
// reported that. Used by the spawner (start), the reaper (reaped) and the slots' own
// idle trim (giveBack).
//
// A child touches a page or two of its slot's stack, and the control page: 8 KiB of
// private memory per slot that ever ran one, which a slot kept for the life of the
// init. Once the init is quiet (idleTrim) the free slots' pages go back to the kernel
// (MADV_DONTNEED: a free slot's memory is only ever read after start wrote it), so an
// idle init holds none of it; the next spawn on a slot faults its pages in again, two
// page faults a quiet spell.
type asyncSlots struct {
	mu    sync.Mutex // a leaf: nothing else is locked under it
	all   []*asyncSlot
	quiet *idleTrim // runs giveBack; made with the first slot, under mu
}

// start starts argv0 as cloneSpawn does, on a free slot, without waiting for the
// child's exec or failure: a failure is the reaper's to report (reaped). It returns
// ok false, having done nothing, if all maxAsync slots are in use or the spawn's
// strings do not fit a slot, and an error if no child was made.
func (s *asyncSlots) start(argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, filter *unix.SockFprog, cached bool) (pid int, ok bool, err error) {
	sl := s.get()
	if sl == nil {
		return 0, false, nil
	}
	pid, ok, err = sl.start(argv0, argv, attr, cgroup, procs, filter, cached)
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.claimed = false
	if !ok || err != nil {
		sl.release()
		return 0, ok, err
	}
	sl.busy, sl.pid, sl.used = true, pid, true
	s.quiet.spawned()
	return pid, true, nil
}

// get returns a free slot, claimed for the spawner, or nil if all maxAsync are in
// use: it frees the slots whose child has exec'd, and maps a new one while there are
// fewer than maxAsync.
func (s *asyncSlots) get() *asyncSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var free *asyncSlot
	for _, sl := range s.all {
		sl.releaseIfExeced()
		if !sl.busy && !sl.claimed && free == nil {
			free = sl
		}
	}
	if free != nil {
		free.claimed = true
		return free
	}
	if len(s.all) >= maxAsync {
		return nil
	}
	sl, err := newAsyncSlot()
	if err != nil {
		return nil // the spawn waits for its child instead
	}
	if s.quiet == nil {
		s.quiet = afterQuiet(s.giveBack)
	}
	sl.claimed = true
	s.all = append(s.all, sl)
	return sl
}

// giveBack returns the pages of every free slot that ran a child since the last time
// to the kernel. A busy slot keeps them: its child may still run on its stack, or
// have left its failure in its control page for the reaper; so does a claimed one,
// which the spawner is filling (a spawn after a quiet spell may meet the trim).
func (s *asyncSlots) giveBack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.all {
		sl.releaseIfExeced()
		if sl.busy || sl.claimed || !sl.used {
			continue
		}
		if err := unix.Madvise(sl.mem[slotGuard:], unix.MADV_DONTNEED); err == nil {
			sl.used = false
		}
	}
}

// reaped is called by the reaper for an exited child pid before it reports it: it
// frees the child's slot, if it has one, and returns the PATH cache's entry to forget
// for it (name "" if none: the path came from the cache and the exec found no file
// there) and the error that ended the child before its exec, if it did.
func (s *asyncSlots) reaped(pid int) (forget pathKey, failed error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.all {
		if !sl.busy || sl.pid != pid {
			continue
		}
		// The child has exited, so it left the slot: its err is final.
		if sl.a.err != 0 {
			// Copied out of the slot, which the next spawn may reuse once released.
			name := ""
			if argv := sl.b.strs(uint64(sl.a.argv)); len(argv) > 0 {
				name = argv[0]
			}
			failed = fmt.Errorf("failed to start %s: %w", name, childError(sl.a.stage, sl.a.err))
			if sl.cached && sl.a.stage == C.SG_STAGE_EXEC && syscall.Errno(sl.a.err) == unix.ENOENT {
				forget = pathKey{name, pathOf(sl.b.strs(uint64(sl.a.envp)))}
			}
		}
		sl.release()
		return forget, failed
	}
	return pathKey{}, nil
}

// newAsyncSlot maps a slot.
func newAsyncSlot() (*asyncSlot, error) {
	mem, err := unix.Mmap(-1, 0, slotGuard+slotStack+slotCtl+slotArgs, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK)
	if err != nil {
		return nil, fmt.Errorf("failed to map a spawn stack: %w", err)
	}
	if err := unix.Mprotect(mem[:slotGuard], unix.PROT_NONE); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("failed to protect a spawn stack's guard page: %w", err)
	}
	ctl := unsafe.Pointer(&mem[slotGuard+slotStack])
	a := (*C.struct_sg_spawn)(ctl)
	tid := (*uint32)(unsafe.Add(ctl, (unsafe.Sizeof(*a)+7)&^7))
	return &asyncSlot{mem: mem, a: a, tid: tid}, nil
}

// args returns the slot's args area laid out for n bytes of strings, p pointers and
// nfds fds (the pointers first, then the fds, then the strings), or ok false if they
// do not fit.
func (sl *asyncSlot) args(n, p, nfds int) (m spawnArgs, ok bool) {
	area := sl.mem[slotGuard+slotStack+slotCtl:]
	fdsAt := 8 * p
	strAt := fdsAt + 4*nfds
	if strAt+n > len(area) {
		return spawnArgs{}, false
	}
	if p > 0 {
		m.b.ptrs = unsafe.Slice((*uint64)(unsafe.Pointer(&area[0])), p)[:0]
	}
	if nfds > 0 {
		m.fds = unsafe.Slice((*int32)(unsafe.Pointer(&area[fdsAt])), nfds)
	}
	m.b.buf = area[strAt : strAt : strAt+n]
	return m, true
}

// start starts argv0 as cloneSpawn does on the free slot sl, without waiting for the
// child's exec or failure: a failure is the reaper's to report (reaped). It returns
// the pid, or an error if no child was made, or ok false, having done nothing, if
// the spawn's strings do not fit the slot; the caller marks the slot busy, or frees
// it.
func (sl *asyncSlot) start(argv0 string, argv []string, attr *syscall.ProcAttr, cgroup, procs int, filter *unix.SockFprog, cached bool) (pid int, ok bool, err error) {
	n, p := cstringsSize(argv0, attr.Dir, argv, attr.Env)
	m, ok := sl.args(n, p, len(attr.Files))
	if !ok {
		return 0, false, nil
	}
	*sl.a = C.struct_sg_spawn{}
	fillSpawn(sl.a, &m, argv0, argv, attr, cgroup, procs, filter)
	sl.b = m.b
	sl.a.stack = C.uint64_t(uintptr(unsafe.Pointer(&sl.mem[slotGuard])))
	sl.a.stack_size = slotStack
	sl.a.tid = C.uint64_t(uintptr(unsafe.Pointer(sl.tid)))
	atomic.StoreUint32(sl.tid, 1)
	if pid = int(C.sg_spawn_async(sl.a)); pid < 0 {
		return 0, true, cloneError(pid, cgroup)
	}
	sl.cached = cached
	return pid, true, nil
}

// releaseIfExeced frees a busy slot whose child has exec'd: the reaper has nothing to
// report from it. The caller holds asyncSlots.mu.
func (sl *asyncSlot) releaseIfExeced() {
	if sl.busy && atomic.LoadUint32(sl.tid) == 0 && sl.a.err == 0 {
		sl.release()
	}
}

// release frees the slot. Its child has left it, or none was made.
func (sl *asyncSlot) release() {
	atomic.StoreUint32(sl.tid, 0)
	sl.b, sl.busy, sl.pid, sl.cached = cstrings{}, false, 0, false
}
