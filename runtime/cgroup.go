package runtime

import (
	"fmt"
	"strings"
	"time"
)

// Limits are the resource limits of one sandbox, applied to its cgroups; 0 means no
// limit. See Config.MemoryBytes, Config.Pids and Config.CPUMillis.
type Limits struct {
	// MemoryBytes caps the memory (page cache and tmpfs included) of every process of
	// the sandbox together; past it the kernel's OOM killer ends a process inside the
	// sandbox, never outside it.
	MemoryBytes int64
	// Pids caps the tasks (processes and threads) of the sandbox together; fork and
	// clone fail with EAGAIN past it.
	Pids int
	// CPUMillis is the CPU quota in thousandths of a core: 1000 is one core, 500 half
	// of one. The smallest quota the kernel takes is 10. The group's CPU weight
	// (cpu.shares, cpu.weight) follows it, 1000 being the default weight, so busy
	// sandboxes share a contended CPU in proportion to their quotas.
	CPUMillis int
}

// Usage is what the processes of a sandbox use now, read from its cgroups.
type Usage struct {
	// MemoryBytes is the memory charged to the sandbox, or -1 without a memory
	// controller.
	MemoryBytes int64
	// Pids is the number of tasks (processes and threads) in the sandbox.
	Pids int
}

// cgroupScopePrefix starts the name of the group that holds one node's sandboxes, under
// the server's own cgroup: sandgate-<scope>/<sandbox>.<random>/<tree>.
const cgroupScopePrefix = "sandgate-"

// cgroupEmptyBound bounds the wait for a killed group to empty: every process in it got
// SIGKILL, so only a process stuck in the kernel (D state) takes longer.
const cgroupEmptyBound = 5 * time.Second

// cgroupName makes s usable as one cgroup directory name: letters, digits, '_' and '-'
// are kept, anything else becomes '_'. The result is never empty.
func cgroupName(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// scopeDirName is the group of one node's sandboxes; "" is the scope "default".
func scopeDirName(scope string) string {
	if scope == "" {
		scope = "default"
	}
	return cgroupScopePrefix + cgroupName(scope)
}

// sandboxOfGroup returns the sandbox id part of a sandbox group's name (<id>.<random>).
func sandboxOfGroup(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// limits returns the cgroup limits of c.
func (c *Config) limits() Limits {
	return Limits{MemoryBytes: c.MemoryBytes, Pids: c.Pids, CPUMillis: c.CPUMillis}
}

// validate checks a Limits value.
func (l Limits) validate() error {
	switch {
	case l.MemoryBytes < 0, l.Pids < 0, l.CPUMillis < 0:
		return fmt.Errorf("%w: negative limit", ErrInvalid)
	case l.CPUMillis > 0 && l.CPUMillis < 10:
		return fmt.Errorf("%w: cpu_millis below 10", ErrInvalid)
	}
	return nil
}

// any reports whether l limits anything.
func (l Limits) any() bool { return l != Limits{} }

// Usage returns what the sandbox's processes use now. It returns ErrNoCgroups when the
// sandbox runs without cgroups (see Containment).
func (s *Sandbox) Usage() (Usage, error) {
	if s.cg == nil {
		return Usage{}, ErrNoCgroups
	}
	u, err := s.cg.usage()
	if err != nil {
		return Usage{}, fmt.Errorf("failed to read usage: %w", err)
	}
	return u, nil
}

// SetLimits applies changed limits to the running sandbox (a new budget), for the
// processes already running too. Lowering MemoryBytes below what is in use fails
// unless the kernel can reclaim enough. It returns ErrNoCgroups when the sandbox runs
// without cgroups, and ErrClosed after Close.
func (s *Sandbox) SetLimits(l Limits) error {
	if err := l.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case s.cg == nil && l.any():
		return ErrNoCgroups
	case s.cg == nil:
		return nil
	}
	if err := s.cg.setLimits(l); err != nil {
		return fmt.Errorf("failed to set limits: %w", err)
	}
	return nil
}
