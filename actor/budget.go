package actor

import (
	"context"
	"time"
)

// Budget is what a sandbox may use. Durations are rendered by the gateway as *_ms fields;
// the integer fields carry the HTTP API's JSON names (gateway/openapi.json). A zero field means "not set" in
// Config.Limits (filled from DefaultBudget) and in a Policy result (filled from Limits).
type Budget struct {
	IdleTTL           time.Duration `json:"-"` // idle time before hibernation
	MaxDuration       time.Duration `json:"-"` // lifetime from creation before expiry
	MaxProcesses      int           `json:"max_processes"`
	MaxExecTimeout    time.Duration `json:"-"` // clamp and default for exec timeouts
	OutputBufferBytes int           `json:"output_buffer_bytes"`
}

// DefaultBudget returns the built-in operator defaults: idle 15 min, max 24 h, 64
// processes, exec timeout 10 min, 1 MiB output buffer.
func DefaultBudget() Budget {
	return Budget{
		IdleTTL:           15 * time.Minute,
		MaxDuration:       24 * time.Hour,
		MaxProcesses:      64,
		MaxExecTimeout:    10 * time.Minute,
		OutputBufferBytes: 1 << 20,
	}
}

// WithDefaults returns b with its zero fields taken from DefaultBudget: the operator's
// limits as Open fills them.
func (b Budget) WithDefaults() Budget { return b.fill(DefaultBudget()) }

// fill returns b with zero (or negative) fields taken from d.
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
	return b
}

// clamp returns b with unset fields filled from limits and every field narrowed to at
// most limits: a policy can only narrow the operator's maxima.
func (b Budget) clamp(limits Budget) Budget {
	b = b.fill(limits)
	b.IdleTTL = min(b.IdleTTL, limits.IdleTTL)
	b.MaxDuration = min(b.MaxDuration, limits.MaxDuration)
	b.MaxProcesses = min(b.MaxProcesses, limits.MaxProcesses)
	b.MaxExecTimeout = min(b.MaxExecTimeout, limits.MaxExecTimeout)
	b.OutputBufferBytes = min(b.OutputBufferBytes, limits.OutputBufferBytes)
	return b
}

// BudgetRequest is what a Policy is asked about: the sandbox being created.
type BudgetRequest struct {
	Tenant    string
	SandboxID string
	Labels    map[string]string
}

// Policy decides a sandbox's budget at creation. The actor calls Budget on the sandbox's
// actor goroutine, so implementations must be safe for concurrent use by many actors and
// should answer quickly (the gateway's Wasm adapter runs with a deadline). The result is
// clamped to Config.Limits.
type Policy interface {
	Budget(ctx context.Context, r BudgetRequest) (Budget, error)
}

// DefaultPolicy returns a Policy that gives every sandbox the limits themselves.
func DefaultPolicy(limits Budget) Policy { return defaultPolicy{limits.fill(DefaultBudget())} }

type defaultPolicy struct{ b Budget }

func (p defaultPolicy) Budget(context.Context, BudgetRequest) (Budget, error) { return p.b, nil }

var _ Policy = defaultPolicy{}
