package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawnJob is one spawn request with the fds that came with it.
type spawnJob struct {
	fr  *frame
	fds []int
}

// spawnLoop runs on its own OS thread for the life of the init. It hardens that thread
// (no_new_privs, an empty capability bounding set, no inheritable or ambient
// capabilities, the seccomp filter) and then serves
// the control socket from it (serve), forking every sandbox process right where its
// request was read, so each inherits exactly that state.
//
// Why a thread and not the whole init: syscall.AllThreadsSyscall would harden every
// thread at once but refuses in a cgo binary, which sandgate is (net). seccomp, the
// bounding set and no_new_privs are per thread and inherited by clone, and a goroutine
// locked to its thread forks from that thread. The thread is never unlocked, so Go
// never runs anything else on it; it ends with the process.
//
// Which spawn path: chooseSpawnPath probes the own one first, before the thread is
// hardened (the fallback's filter refuses clone3). On the own path the
// thread's filter allows clone3, which it clones with, and each child adds a filter
// that refuses it (see seccomp_linux.go).
func (ip *initProc) spawnLoop(ready chan<- error, done chan<- int) {
	goruntime.LockOSThread()
	ip.own = chooseSpawnPath(ip.cfg, ip.homeDir)
	ip.homeDir = -1
	if ip.own != nil && ip.home != nil {
		_ = ip.home.Close() // no moves on this path
		ip.home = nil
	}
	build := buildFilter
	if ip.own != nil {
		build = buildThreadFilter
	}
	prog, err := build()
	if err == nil {
		err = hardenThread(prog)
	}
	if err != nil {
		ready <- err
		return
	}
	ready <- nil
	ip.serve(done)
}

// hardenThread applies to the calling thread what every sandbox process inherits: the
// seccomp filter prog last.
func hardenThread(prog []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to set no_new_privs: %w", err)
	}
	last, err := capLastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("failed to drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to clear ambient capabilities: %w", err)
	}
	// A root process keeps its inheritable set across exec whatever the bounding set.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("failed to read capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("failed to clear inheritable capabilities: %w", err)
	}
	return installFilter(prog)
}

func capLastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("failed to read cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("failed to parse cap_last_cap: %w", err)
	}
	return n, nil
}

// spawn starts one process and answers with started (its pid, with SCM_CREDENTIALS
// naming it so the client's kernel translates it to the host pid) or error.
func (ip *initProc) spawn(j spawnJob) {
	fr := j.fr
	status := -1
	if fr.Status && len(j.fds) > 0 {
		status, j.fds = j.fds[len(j.fds)-1], j.fds[:len(j.fds)-1]
	}
	defer closeFDs(j.fds)
	defer func() {
		if status >= 0 { // not handed to a kid: the spawn failed
			_ = unix.Close(status)
		}
	}()
	attr, argv0, cached, err := ip.procAttr(fr, j.fds)
	if err != nil {
		_ = ip.c.send(errorFrame(fr.ID, err), nil, nil)
		return
	}
	if !fr.NoWait {
		ip.pa.pidfd = -1
		attr.Sys.PidFD = &ip.pa.pidfd
	}
	// The fork runs without mu, so the reaper goes on reporting exits meanwhile (the
	// spawner may wait for its child in clone3, or be preempted by it there); a child
	// it finds before it is registered below waits for that (spawning).
	ip.mu.Lock()
	ip.spawning = true
	ip.spawnSeq++
	ip.mu.Unlock()
	defer ip.mu.Unlock() // taken again below, to register the child
	if err := ip.lease.hold(fr.Lease); err != nil {
		ip.mu.Lock()
		ip.spawnedLocked()
		_ = ip.c.send(errorFrame(fr.ID, err), nil, nil)
		return
	}
	pid, err := ip.forkIn(j, argv0, fr.Argv, attr, cached)
	if cached && errors.Is(err, unix.ENOENT) {
		// Gone from the host's directory since it was cached: search again.
		ip.paths.forget(fr.Argv[0], attr.Env)
		if argv0, _, err = ip.paths.lookPath(fr.Argv[0], attr.Env, attr.Dir); err == nil {
			pid, err = ip.forkIn(j, argv0, fr.Argv, attr, false)
		}
	}
	ip.lease.release()
	pidfd := -1
	if attr.Sys.PidFD != nil {
		pidfd = *attr.Sys.PidFD
	}
	ip.mu.Lock()
	ip.spawnedLocked()
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	if err != nil {
		_ = ip.c.send(errorFrame(fr.ID, fmt.Errorf("failed to start %s: %w", fr.Argv[0], err)), nil, nil)
		return
	}
	ip.kids[pid] = kid{id: fr.ID, session: fr.Session || fr.TTY, status: status, quiet: fr.NoWait && status >= 0}
	status = -1
	ip.ids[fr.ID] = pid
	ip.kick.forked()
	ip.trim.spawned()
	if fr.NoWait {
		return // the client does not wait: no started frame
	}
	// The pidfd goes to the client, whose poll then sees the exit at once, without
	// waiting for the exit frame to travel (the exit status still does).
	var fds []int
	one := [1]int{pidfd}
	if pidfd >= 0 {
		fds = one[:]
	}
	cred := &unix.Ucred{Pid: int32(pid), Uid: ip.uid, Gid: ip.gid}
	started := &frame{Op: opStarted, ID: fr.ID, PID: pid}
	if err := ip.c.send(started, fds, cred); err != nil {
		// Without its host pid the client can still wait for and signal the process.
		_ = ip.c.send(started, nil, nil)
	}
}

// spawnedLocked ends the spawn that set spawning: its child, if any, is registered
// by the caller before it releases mu. It wakes a reaper waiting for that.
func (ip *initProc) spawnedLocked() {
	ip.spawning = false
	ip.spawned.Broadcast()
}

// forkIn starts the process, in the cgroup the request names if any. On the own path
// (ownSpawn) the kernel clones it there. On the fallback path the init enters that
// group for the fork, so the child starts there, and returns to its own group at once;
// with a lease the caller holds it (initLease.hold), so the group cannot be frozen
// meanwhile with the init inside. (The seccomp filter that fallback children inherit
// from this thread refuses clone3, whose flags it cannot see.)
func (ip *initProc) forkIn(j spawnJob, argv0 string, argv []string, attr *syscall.ProcAttr, cached bool) (int, error) {
	if ip.own != nil {
		return ip.own.start(j, argv0, argv, attr, cached)
	}
	if !j.fr.Cgroup {
		return syscall.ForkExec(argv0, argv, attr)
	}
	if ip.home == nil {
		return 0, fmt.Errorf("%w: a cgroup spawn needs an init started in a cgroup", ErrInvalidRequest)
	}
	procs, _ := cgroupFDs(j)
	if _, err := unix.Write(procs, []byte("0")); err != nil {
		return 0, fmt.Errorf("failed to enter the process's cgroup: %w", err)
	}
	pid, err := syscall.ForkExec(argv0, argv, attr)
	if _, herr := ip.home.Write([]byte("0")); herr != nil && err == nil {
		// Still in the spawn's group: a kill of that group would end the init.
		_ = unix.Kill(pid, unix.SIGKILL)
		return 0, fmt.Errorf("failed to return to the init's cgroup: %w", herr)
	}
	return pid, err
}

// procAttr checks a spawn frame and turns it into ForkExec's arguments; cached says the
// program's path came from the PATH cache.
func (ip *initProc) procAttr(fr *frame, fds []int) (attr *syscall.ProcAttr, argv0 string, cached bool, err error) {
	stdio := 3
	if fr.TTY {
		stdio = 1
	}
	want := stdio + fr.Extra
	if fr.Cgroup {
		want++
	}
	if fr.CgroupDir {
		want++
	}
	if len(fr.Argv) == 0 || (fr.CgroupDir && !fr.Cgroup) || fr.Extra < 0 || len(fds) != want {
		return nil, "", false, fmt.Errorf("%w: need argv and %d fds, got %d", ErrInvalidRequest, want, len(fds))
	}
	if !fr.Cgroup && ip.lease != nil && ip.lease.freeze >= 0 {
		// It would run in the init's own group, which the lease does not freeze.
		return nil, "", false, fmt.Errorf("%w: a sandbox with a freeze group needs a cgroup for every spawn", ErrInvalidRequest)
	}
	env := fr.Env
	if env == nil {
		env = defaultEnv
	}
	dir := fr.Dir
	if dir == "" {
		dir = "/workspace"
	} else if !path.IsAbs(dir) {
		dir = path.Join("/workspace", dir)
	}
	for _, fd := range fds[:stdio+fr.Extra] {
		// The description is shared with the process, which expects blocking I/O. (The
		// client's are blocking already, as os/exec leaves them: one fcntl to check.)
		if err := setBlocking(fd); err != nil {
			return nil, "", false, fmt.Errorf("failed to make stdio blocking: %w", err)
		}
	}
	if argv0, cached, err = ip.paths.lookPath(fr.Argv[0], env, dir); err != nil {
		return nil, "", false, err
	}
	// The spawner's own, reused: a spawn allocates nothing for it.
	pa := &ip.pa
	files := pa.files[:0]
	*pa = procAttrs{sys: syscall.SysProcAttr{Setpgid: !fr.Session && !fr.TTY, Setsid: fr.Session || fr.TTY}}
	if fr.TTY {
		pa.sys.Setctty, pa.sys.Ctty = true, 0
		files = append(files, uintptr(fds[0]), uintptr(fds[0]), uintptr(fds[0]))
	} else {
		files = append(files, uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2]))
	}
	for _, fd := range fds[stdio : stdio+fr.Extra] {
		files = append(files, uintptr(fd))
	}
	pa.files = files // at most 253 (SCM_MAX_FD): kept
	if ip.cfg.UID != 0 || ip.cfg.GID != 0 {
		pa.cred = syscall.Credential{Uid: uint32(ip.cfg.UID), Gid: uint32(ip.cfg.GID), Groups: noGroups}
		pa.sys.Credential = &pa.cred
	}
	pa.attr = syscall.ProcAttr{Dir: dir, Env: env, Files: files, Sys: &pa.sys}
	return &pa.attr, argv0, cached, nil
}

// defaultEnv is the environment of a spawn that names none. Read only.
var defaultEnv = []string{"PATH=" + DefaultPath, "HOME=/workspace"}

// noGroups is the supplementary groups of a spawn with Config.UID or GID: none.
var noGroups = []uint32{}

// procAttrs is what procAttr builds, in one piece the spawner thread owns and every
// spawn overwrites (initProc.pa): valid until the next spawn.
type procAttrs struct {
	attr  syscall.ProcAttr
	sys   syscall.SysProcAttr
	cred  syscall.Credential
	files []uintptr
	pidfd int // SysProcAttr.PidFD points here
}

// setBlocking clears O_NONBLOCK on fd's description if it is set.
func setBlocking(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	return err
}
