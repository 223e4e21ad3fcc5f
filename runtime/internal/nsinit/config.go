package nsinit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"strings"
	"syscall"
)

// Network says which network a sandbox sees.
type Network string

const (
	// NetworkLoopback gives the sandbox its own network namespace with only lo, up.
	NetworkLoopback Network = "loopback"
	// NetworkNone gives the sandbox its own network namespace with lo left down.
	NetworkNone Network = "none"
	// NetworkHost shares the host's network namespace.
	NetworkHost Network = "host"
)

// Config describes one sandbox's init. The zero value is not usable: ID and Workspace
// are required.
type Config struct {
	// ID is the sandbox id; it becomes the hostname inside. Required, at most 64 bytes.
	ID string `json:"id"`
	// Workspace is the host directory bind-mounted read-write at /workspace. Required.
	// With UserNS its last element must not be a symlink.
	Workspace string `json:"workspace"`
	// Rootfs, if set, is a host directory whose top-level entries make up the read-only
	// root. Empty means a read-only view of the host's /usr, /etc, /opt and the
	// bin, sbin and lib* links or directories.
	Rootfs string `json:"rootfs,omitempty"`
	// Network defaults to NetworkLoopback.
	Network Network `json:"network,omitempty"`
	// UID and GID are the ids spawned processes run as, as seen inside (within UserNS
	// when it is set). Zero (the default) is root inside, without capabilities; without
	// a user namespace a non-zero UID is the fallback way to run unprivileged.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`

	// Cgroup, if set, is the host directory of a cgroup2 group the init starts in
	// (cloned into it). Its cgroup.procs and directory are handed to the init: on the
	// fallback spawn path it returns there after placing each spawn that names a
	// group of its own (SpawnRequest.Cgroup); on its own path it probes, once at
	// start, whether it may clone into the directory (see SpawnRequest.CgroupDir).
	Cgroup string `json:"-"`
	// ForceFork makes the init spawn on its fallback path (Go's ForkExec from the
	// thread that carries the seccomp filter, with the cgroup moves around each fork)
	// even where its own clone3 path works: for tests of that path and to measure one
	// against the other.
	ForceFork bool `json:"force_fork,omitempty"`
	// Enter, if set, is called with the init's host pid once it has started and
	// before it builds the sandbox or spawns anything, so the caller can put it in
	// groups that clone cannot (cgroup v1); an error ends the start.
	Enter func(hostPID int) error `json:"-"`
	// UserNS, if set, puts the init in a new user namespace that maps ids 0 to Size-1
	// inside onto HostUID and HostGID onwards, and that owns its other namespaces: root
	// inside is HostUID outside, with no privilege over the host. The workspace is then
	// mounted idmapped (see the package doc), so its root-owned files belong to root
	// inside. Nil (the default) keeps the host's ids. UserNSSupported says whether this
	// machine allows it.
	UserNS *IDRange `json:"userns,omitempty"`

	// Lease makes the init hold a lease (see the package doc, Leases): when its
	// deadline passes without a renewal (Init.Renew) the init freezes every spawned
	// process, or kills them where it cannot freeze, and refuses spawns until it is
	// renewed. False (the default) is no lease: nothing is ever frozen.
	Lease bool `json:"lease,omitempty"`
	// LeaseUntil is the lease's first deadline, in nanoseconds of CLOCK_BOOTTIME
	// (Now). Zero, or a time already past, starts the sandbox fenced: nothing runs
	// until a renewal.
	LeaseUntil int64 `json:"lease_until,omitempty"`
	// Freeze, with Lease, is the host directory of the cgroup2 group every spawned
	// process runs below: each spawn must then name its group (SpawnRequest.Cgroup),
	// below Freeze, and Cgroup, the init's own, must lie outside it. The init freezes
	// that group (cgroup.freeze) when the lease runs out. Empty, or where the kernel
	// has no cgroup.freeze, the init kills every process of the sandbox instead.
	Freeze string `json:"-"`
}

// IDRange is a contiguous range of host uids and gids that a user namespace maps ids
// 0 to Size-1 onto.
type IDRange struct {
	// HostUID and HostGID are the host ids of uid and gid 0 inside. Both must be
	// above 0: mapping root onto root would give the sandbox the host's root.
	HostUID uint32 `json:"host_uid"`
	HostGID uint32 `json:"host_gid"`
	// Size is how many ids are mapped; at least 1. 65536 gives the sandbox the usual
	// range of a Linux system.
	Size uint32 `json:"size"`
}

// DefaultIDRange maps 65536 ids inside onto host ids 100000 to 165535, the first range
// /etc/subuid hands out on most distributions.
var DefaultIDRange = IDRange{HostUID: 100000, HostGID: 100000, Size: 65536}

// validate reports what makes r unusable, if anything.
func (r IDRange) validate() error {
	switch {
	case r.HostUID == 0 || r.HostGID == 0:
		return errors.New("userns must not map root onto the host's root")
	case r.Size == 0:
		return errors.New("userns size must be at least 1")
	case uint64(r.HostUID)+uint64(r.Size) > math.MaxUint32 || uint64(r.HostGID)+uint64(r.Size) > math.MaxUint32:
		return errors.New("userns range goes past the last host id")
	}
	return nil
}

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.Network == "" {
		c.Network = NetworkLoopback
	}
	switch {
	case c.ID == "" || len(c.ID) > 64:
		return c, fmt.Errorf("%w: id must be 1 to 64 bytes", ErrInvalidConfig)
	case c.Workspace == "" || !path.IsAbs(c.Workspace):
		return c, fmt.Errorf("%w: workspace must be an absolute path", ErrInvalidConfig)
	case c.Rootfs != "" && !path.IsAbs(c.Rootfs):
		return c, fmt.Errorf("%w: rootfs must be an absolute path", ErrInvalidConfig)
	case c.Network != NetworkLoopback && c.Network != NetworkNone && c.Network != NetworkHost:
		return c, fmt.Errorf("%w: unknown network %q", ErrInvalidConfig, c.Network)
	case c.UID < 0 || c.GID < 0:
		return c, fmt.Errorf("%w: negative uid or gid", ErrInvalidConfig)
	}
	switch {
	case !c.Lease && (c.Freeze != "" || c.LeaseUntil != 0):
		return c, fmt.Errorf("%w: freeze and lease_until need a lease", ErrInvalidConfig)
	case c.Freeze != "" && (!path.IsAbs(c.Freeze) || c.Cgroup == ""):
		return c, fmt.Errorf("%w: freeze must be an absolute path, with cgroup set", ErrInvalidConfig)
	case c.Freeze != "" && strings.HasPrefix(path.Clean(c.Cgroup)+"/", path.Clean(c.Freeze)+"/"):
		return c, fmt.Errorf("%w: the init's cgroup must lie outside the freeze group", ErrInvalidConfig)
	}
	if c.UserNS != nil {
		r := *c.UserNS // the caller's value stays the caller's
		c.UserNS = &r
		if err := r.validate(); err != nil {
			return c, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		if uint64(c.UID) >= uint64(r.Size) || uint64(c.GID) >= uint64(r.Size) {
			return c, fmt.Errorf("%w: uid or gid outside the userns range", ErrInvalidConfig)
		}
	}
	return c, nil
}

// SpawnPath is how an init starts processes (Init.SpawnPath); see the package doc,
// "Spawning".
type SpawnPath int

const (
	// SpawnFork is the fallback: Go's ForkExec from the init's thread that carries the
	// seccomp filter, the init moving into a spawn's cgroup for the fork and back.
	SpawnFork SpawnPath = iota
	// SpawnClone is the init's own clone3 path, each child installing the seccomp
	// filter and writing itself into its cgroup (SpawnRequest.Cgroup) before it execs:
	// where the init may not clone into the cgroup itself.
	SpawnClone
	// SpawnCloneInto is the init's own clone3 path, each child cloned straight into
	// its cgroup (SpawnRequest.CgroupDir): nothing moves between cgroups.
	SpawnCloneInto
)

// String names the path.
func (p SpawnPath) String() string {
	switch p {
	case SpawnFork:
		return "fork"
	case SpawnClone:
		return "clone"
	case SpawnCloneInto:
		return "clone-into-cgroup"
	}
	return fmt.Sprintf("SpawnPath(%d)", int(p))
}

// SpawnRequest describes one process for the init to start inside the sandbox.
type SpawnRequest struct {
	// Argv is the command; Argv[0] is looked up in the PATH of Env (or the default
	// PATH) inside the sandbox unless it contains a slash. Required.
	Argv []string
	// Env is the whole environment. Nil means PATH=DefaultPath and HOME=/workspace.
	Env []string
	// Dir is the working directory inside the sandbox; relative to /workspace, which
	// is also the default.
	Dir string
	// Stdin, Stdout and Stderr are passed to the process as fds 0, 1 and 2 (nil means
	// /dev/null). They are duplicated into the init: the caller keeps and closes its
	// copies. Ignored when TTY is set.
	Stdin, Stdout, Stderr *os.File
	// TTY, if set, is a PTY slave that becomes fds 0, 1 and 2 and the controlling
	// terminal of the process, which then leads a new session.
	TTY *os.File
	// Session puts the process in a new session (setsid) rather than only a new
	// process group. Implied by TTY.
	Session bool
	// Extra are passed to the process as fds 3, 4, ..., duplicated like the stdio.
	Extra []*os.File
	// Cgroup, if set, is a cgroup2 group's cgroup.procs, opened for writing by the
	// caller: the process starts in that group, so every process it forks does too,
	// setsid or not (the init enters the group for the fork and returns to its own;
	// the opener's credentials are what the kernel checks). The init must have been
	// started with Config.Cgroup.
	Cgroup *os.File
	// CgroupDir, if set (with Cgroup), is that group's directory, open (O_PATH will
	// do). Where the kernel allows, the init then clones the process straight into the
	// group (clone3 with CLONE_INTO_CGROUP) and neither it nor the process moves:
	// the init's own credentials are what the kernel checks then, so with a user
	// namespace the group's cgroup.procs, and that of the group's common ancestor
	// with Config.Cgroup, must be writable by Config.UserNS.HostUID (the init's probe
	// at start, a clone into Config.Cgroup, says whether they are; if not, it falls
	// back to the process writing itself into Cgroup before it execs).
	CgroupDir *os.File
	// Status, if set, is the write end of a pipe: once the process has exited, the
	// init writes its status there (ReadStatus reads it) and closes it, before it
	// sends the exit frame. An exec that polls the read end learns how its command
	// ended without waiting for that frame to be received and handed on by the
	// Init's reader goroutine: one wake-up less on the way out of every exec. With
	// NoWait the pipe is the only report: the caller hands what it read to
	// Child.Finish (or, if the pipe ended without a status, calls Wait).
	Status *os.File
	// NoWait makes Spawn return as soon as the request is sent, and the init answers
	// only a failure (no started frame, no pidfd): an exec, which needs neither the
	// pid nor a pidfd, does not wait for that frame's trip back (it arrived when a
	// command such as true was about done) and each exec costs one frame less. The
	// Child then has no PID, HostPID or ExitFD; a process that could not start ends
	// it, and Wait returns an error wrapping ErrNotStarted and the cause (ENOENT,
	// ErrLeaseExpired, ...). It requires Status, which is then the only report of the
	// exit: no exit frame follows (see Status).
	NoWait bool
}

// DefaultPath is the PATH of a spawned process whose request has no Env.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ExitStatus is how a spawned process ended.
type ExitStatus struct {
	// Code is the exit code, or -1 if the process was killed by a signal.
	Code int
	// Signal is the signal that killed the process, or 0.
	Signal syscall.Signal
}

// String reports the status as a shell would.
func (s ExitStatus) String() string {
	if s.Signal != 0 {
		return "signal: " + s.Signal.String()
	}
	return fmt.Sprintf("exit status %d", s.Code)
}
