package actor

import (
	"context"
	"fmt"
	"time"
)

// Network is how much network a sandbox may use, enforced by an isolating runtime
// driver. The values are ordered: none < loopback < host, and a policy may only narrow.
type Network string

// Network values. The empty Network means "not set".
const (
	NetworkNone     Network = "none"     // no network at all, not even loopback
	NetworkLoopback Network = "loopback" // the sandbox's own loopback interface only
	NetworkHost     Network = "host"     // the host's network
)

// rank orders networks; 0 is unset or unknown.
func (n Network) rank() int {
	switch n {
	case NetworkNone:
		return 1
	case NetworkLoopback:
		return 2
	case NetworkHost:
		return 3
	}
	return 0
}

// Valid reports whether n is one of NetworkNone, NetworkLoopback and NetworkHost.
func (n Network) Valid() bool { return n.rank() > 0 }

// Budget is what a sandbox may use. Durations are rendered by the gateway as *_ms fields;
// the integer fields carry the HTTP API's JSON names (gateway/openapi.json). A zero field
// means "not set": in Config.Defaults and Config.Limits it takes the built-in default
// (DefaultBudget), in a Policy result the operator's default (Config.Defaults).
//
// MemoryBytes, Pids, CPUMillis, DiskBytes and Network are enforced by an isolating
// runtime driver; the local driver ignores them.
type Budget struct {
	IdleTTL           time.Duration `json:"-"` // idle time before hibernation
	MaxDuration       time.Duration `json:"-"` // lifetime from creation before expiry
	MaxProcesses      int           `json:"max_processes"`
	MaxExecTimeout    time.Duration `json:"-"` // clamp and default for exec timeouts
	OutputBufferBytes int           `json:"output_buffer_bytes"`
	MemoryBytes       int64         `json:"memory_bytes"` // memory of all its processes
	Pids              int           `json:"pids"`         // tasks (processes and threads) at once
	CPUMillis         int           `json:"cpu_millis"`   // CPU quota, 1000 = one core
	DiskBytes         int64         `json:"disk_bytes"`   // workspace size
	Network           Network       `json:"network"`
}

// DefaultBudget returns the built-in operator defaults: idle 15 min, max 24 h, 64
// processes, exec timeout 10 min, 1 MiB output buffer, 512 MiB of memory, 256 pids,
// one core, 1 GiB of disk and loopback network.
func DefaultBudget() Budget {
	return Budget{
		IdleTTL:           15 * time.Minute,
		MaxDuration:       24 * time.Hour,
		MaxProcesses:      64,
		MaxExecTimeout:    10 * time.Minute,
		OutputBufferBytes: 1 << 20,
		MemoryBytes:       512 << 20,
		Pids:              256,
		CPUMillis:         1000,
		DiskBytes:         1 << 30,
		Network:           NetworkLoopback,
	}
}

// WithDefaults returns b with its zero fields taken from DefaultBudget.
func (b Budget) WithDefaults() Budget { return b.fill(DefaultBudget()) }

// OperatorBudgets resolves the operator's defaults and maxima as Open does: a field
// unset in both takes DefaultBudget's value; a maximum unset takes the default's; a
// default unset takes DefaultBudget's narrowed to the maximum. A default above its
// maximum, or an unknown Network, is an error (ErrInvalid) naming the field.
func OperatorBudgets(defaults, max Budget) (Budget, Budget, error) {
	if err := checkBudget("default", defaults); err != nil {
		return Budget{}, Budget{}, err
	}
	if err := checkBudget("max", max); err != nil {
		return Budget{}, Budget{}, err
	}
	// A maximum that is set caps the built-in default, not an explicit one: that is
	// refused below.
	base := DefaultBudget().clamp(max.fill(DefaultBudget()))
	d := defaults.fill(base)
	m := max.fill(d)
	for _, f := range budgetFields(d, m) {
		if f.d > f.m {
			return Budget{}, Budget{}, fmt.Errorf("%w: budget default %s %d is above its max %d", ErrInvalid, f.name, f.d, f.m)
		}
	}
	return d, m, nil
}

// checkBudget refuses negative fields and an unknown network.
func checkBudget(which string, b Budget) error {
	for _, f := range budgetFields(b, b) {
		if f.d < 0 {
			return fmt.Errorf("%w: budget %s %s must not be negative", ErrInvalid, which, f.name)
		}
	}
	if b.Network != "" && !b.Network.Valid() {
		return fmt.Errorf("%w: budget %s network %q is not none, loopback or host", ErrInvalid, which, b.Network)
	}
	return nil
}

type budgetField struct {
	name string
	d, m int64
}

// budgetFields pairs the fields of a and b by their API names; durations in ms and the
// network by rank.
func budgetFields(a, b Budget) []budgetField {
	return []budgetField{
		{"idle_ttl_ms", a.IdleTTL.Milliseconds(), b.IdleTTL.Milliseconds()},
		{"max_duration_ms", a.MaxDuration.Milliseconds(), b.MaxDuration.Milliseconds()},
		{"max_processes", int64(a.MaxProcesses), int64(b.MaxProcesses)},
		{"max_exec_timeout_ms", a.MaxExecTimeout.Milliseconds(), b.MaxExecTimeout.Milliseconds()},
		{"output_buffer_bytes", int64(a.OutputBufferBytes), int64(b.OutputBufferBytes)},
		{"memory_bytes", a.MemoryBytes, b.MemoryBytes},
		{"pids", int64(a.Pids), int64(b.Pids)},
		{"cpu_millis", int64(a.CPUMillis), int64(b.CPUMillis)},
		{"disk_bytes", a.DiskBytes, b.DiskBytes},
		{"network", int64(a.Network.rank()), int64(b.Network.rank())},
	}
}

// fill returns b with zero (or negative, or unknown) fields taken from d.
func (b Budget) fill(d Budget) Budget {
	if b.IdleTTL <= 0 {
		b.IdleTTL = d.IdleTTL
	}
	if b.MaxDuration <= 0 {
		b.MaxDuration = d.MaxDuration
	}
	if b.MaxProcesses <= 0 {
		b.MaxProcesses = d.MaxProcesses
	}
	if b.MaxExecTimeout <= 0 {
		b.MaxExecTimeout = d.MaxExecTimeout
	}
	if b.OutputBufferBytes <= 0 {
		b.OutputBufferBytes = d.OutputBufferBytes
	}
	if b.MemoryBytes <= 0 {
		b.MemoryBytes = d.MemoryBytes
	}
	if b.Pids <= 0 {
		b.Pids = d.Pids
	}
	if b.CPUMillis <= 0 {
		b.CPUMillis = d.CPUMillis
	}
	if b.DiskBytes <= 0 {
		b.DiskBytes = d.DiskBytes
	}
	if !b.Network.Valid() {
		b.Network = d.Network
	}
	return b
}

// clamp returns b with every field narrowed to at most max (b and max fully set).
func (b Budget) clamp(max Budget) Budget {
	b.IdleTTL = min(b.IdleTTL, max.IdleTTL)
	b.MaxDuration = min(b.MaxDuration, max.MaxDuration)
	b.MaxProcesses = min(b.MaxProcesses, max.MaxProcesses)
	b.MaxExecTimeout = min(b.MaxExecTimeout, max.MaxExecTimeout)
	b.OutputBufferBytes = min(b.OutputBufferBytes, max.OutputBufferBytes)
	b.MemoryBytes = min(b.MemoryBytes, max.MemoryBytes)
	b.Pids = min(b.Pids, max.Pids)
	b.CPUMillis = min(b.CPUMillis, max.CPUMillis)
	b.DiskBytes = min(b.DiskBytes, max.DiskBytes)
	if b.Network.rank() > max.Network.rank() {
		b.Network = max.Network
	}
	return b
}

// decide turns a policy's answer into a sandbox's budget: unset fields take the
// operator's defaults, and everything is narrowed to the operator's maxima, so a policy
// can only narrow them.
func (b Budget) decide(defaults, max Budget) Budget { return b.fill(defaults).clamp(max) }

// BudgetRequest is what a Policy is asked about: the sandbox being created.
type BudgetRequest struct {
	Tenant    string
	SandboxID string
	Labels    map[string]string
}

// Policy decides a sandbox's budget at creation. The actor calls Budget on the sandbox's
// actor goroutine, so implementations must be safe for concurrent use by many actors and
// should answer quickly (the gateway's Wasm adapter runs with a deadline). The result's
// unset fields take Config.Defaults, and it is clamped to Config.Limits.
type Policy interface {
	Budget(ctx context.Context, r BudgetRequest) (Budget, error)
}

// DefaultPolicy returns a Policy that gives every sandbox the budget b (its unset fields
// from DefaultBudget).
func DefaultPolicy(b Budget) Policy { return defaultPolicy{b.fill(DefaultBudget())} }

type defaultPolicy struct{ b Budget }

func (p defaultPolicy) Budget(context.Context, BudgetRequest) (Budget, error) { return p.b, nil }

var _ Policy = defaultPolicy{}
