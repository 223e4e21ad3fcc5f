package nsinit

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownSpawn is the init's spawn path of its own: clone3 with CLONE_VM|CLONE_VFORK onto
// a stack of its own, the child cloned straight into its cgroup, with default signal
// handlers and a pidfd, adding a seccomp filter that refuses clone3 before it execs
// (the spawner thread's, which it inherits, allows it; see seccomp_linux.go and the
// package doc, "Spawning"). It is used by the spawner thread only.
type ownSpawn struct {
	// into says the kernel lets the init clone into a cgroup2 group (CLONE_INTO_CGROUP);
	// if not, a child writes itself into its group's cgroup.procs before it execs.
	into bool
	// filter is the seccomp program each child adds (childFilter); kept alive with prog.
	filter *unix.SockFprog
	prog   []unix.SockFilter
	// pin pins filter and prog for the life of the init: the children read them, an
	// async one after the call that started it returned.
	pin goruntime.Pinner
	// async are the slots of the spawns the spawner does not wait for.
	async asyncSlots
	// waited is what the children of the spawns it waits for read.
	waited waitedArgs
}

// maxAsync bounds the spawns in flight that the spawner did not wait for (asyncSlots):
// past it, a spawn waits for its child's exec (CLONE_VFORK), as every spawn did
// before. Eight clients need about eight; each slot ever used keeps a few pages.
const maxAsync = 16

// chooseSpawnPath probes the own spawn path once, on the spawner thread before it is
// hardened, and returns it, or nil where it cannot be used: a build without it (no
// cgo, another architecture), Config.ForceFork, or a kernel that refuses the probe.
// homeDir is the init's own cgroup2 directory, or -1; it is closed here, as nothing
// after the probe needs it.
func chooseSpawnPath(cfg Config, homeDir int) *ownSpawn {
	if homeDir >= 0 {
		defer unix.Close(homeDir)
	}
	if !cloneBuilt || cfg.ForceFork {
		return nil
	}
	if _, err := buildFilter(); err != nil {
		return nil // hardenThread fails the start with the same error
	}
	prog := childFilter()
	into, err := probeClone(homeDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nsinit: spawning with ForkExec and cgroup moves:", err)
		return nil
	}
	o := &ownSpawn{into: into, prog: prog, filter: &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}}
	o.pin.Pin(o.filter)
	o.pin.Pin(&o.prog[0])
	return o
}

// spawnPath says which spawn path the init took.
func (ip *initProc) spawnPath() SpawnPath {
	switch {
	case ip.own == nil:
		return SpawnFork
	case ip.own.into:
		return SpawnCloneInto
	}
	return SpawnClone
}

// start starts the process of job j as attr says; cached says argv0 came from the
// PATH cache. cgroupFDs gives the group's cgroup.procs and directory fds of a spawn
// that names one. A NoWait spawn is started async where a slot is free: the call
// returns without waiting for the child's exec, and a child that fails before it is
// reported by the reaper (asyncSlots). The caller holds the lease (initLease.hold),
// not the init's mu.
func (o *ownSpawn) start(j spawnJob, argv0 string, argv []string, attr *syscall.ProcAttr, cached bool) (int, error) {
	cg, procs := -1, -1
	if j.fr.Cgroup {
		p, d := cgroupFDs(j)
		if o.into && d >= 0 {
			cg = d
		} else {
			procs = p
		}
	}
	async := j.fr.NoWait && attr.Sys.PidFD == nil
	clone := func(cg, procs int) (pid, pidfd int, err error) {
		if async {
			pid, ok, err := o.async.start(argv0, argv, attr, cg, procs, o.filter, cached)
			if ok {
				return pid, -1, err
			}
		}
		return cloneSpawn(&o.waited, argv0, argv, attr, cg, procs, attr.Sys.PidFD != nil, o.filter)
	}
	pid, pidfd, err := clone(cg, procs)
	if cg >= 0 && errors.Is(err, errCloneInto) {
		// The init may clone into its own group but not this one (its cgroup.procs, or
		// that of their common ancestor, is not the init's to write): no child was
		// made, so let the child write itself in, with the opener's rights.
		procs, _ = cgroupFDs(j)
		pid, pidfd, err = clone(-1, procs)
	}
	if attr.Sys.PidFD != nil {
		*attr.Sys.PidFD = pidfd
	}
	return pid, err
}

// cgroupFDs returns the cgroup.procs and (with CgroupDir, else -1) the directory
// that follow a spawn's stdio and extra fds; the status pipe was taken off already.
func cgroupFDs(j spawnJob) (procs, dir int) {
	n := len(j.fds)
	if j.fr.CgroupDir {
		return j.fds[n-2], j.fds[n-1]
	}
	return j.fds[n-1], -1
}
