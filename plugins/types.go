package plugins

import (
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/plugins/internal/wire"
)

// Budget is a sandbox's resource budget, the API's budget object. In a plugin's answer a
// zero field means the operator's default; the host clamps every field to
// [1, operator maximum] so a plugin can only narrow the operator's maxima. A plugin of
// ABI version 1 knows only the first five fields: the others take the operator's
// defaults.
type Budget struct {
	IdleTTLMS         int64   `json:"idle_ttl_ms"`
	MaxDurationMS     int64   `json:"max_duration_ms"`
	MaxProcesses      int64   `json:"max_processes"`
	MaxExecTimeoutMS  int64   `json:"max_exec_timeout_ms"`
	OutputBufferBytes int64   `json:"output_buffer_bytes"`
	MemoryBytes       int64   `json:"memory_bytes"`
	Pids              int64   `json:"pids"`
	CPUMillis         int64   `json:"cpu_millis"`
	DiskBytes         int64   `json:"disk_bytes"`
	Network           Network `json:"network"`
}

// Network is the network a sandbox may use, the API's "network". Ordered from the
// narrowest: NetworkNone < NetworkLoopback < NetworkHost; "" means not set.
type Network string

// Network values.
const (
	NetworkNone     Network = "none"
	NetworkLoopback Network = "loopback"
	NetworkHost     Network = "host"
)

// code is n's encoding in the ABI; 0 (wire.NetworkDefault) for "" or an unknown value.
func (n Network) code() byte {
	switch n {
	case NetworkNone:
		return wire.NetworkNone
	case NetworkLoopback:
		return wire.NetworkLoopback
	case NetworkHost:
		return wire.NetworkHost
	}
	return wire.NetworkDefault
}

func networkOf(code byte) Network {
	switch code {
	case wire.NetworkNone:
		return NetworkNone
	case wire.NetworkLoopback:
		return NetworkLoopback
	case wire.NetworkHost:
		return NetworkHost
	}
	return ""
}

func (b *Budget) wire() wire.Budget {
	return wire.Budget{
		IdleTTLMS: b.IdleTTLMS, MaxDurationMS: b.MaxDurationMS, MaxProcesses: b.MaxProcesses,
		MaxExecTimeoutMS: b.MaxExecTimeoutMS, OutputBufferBytes: b.OutputBufferBytes,
		MemoryBytes: b.MemoryBytes, Pids: b.Pids, CPUMillis: b.CPUMillis, DiskBytes: b.DiskBytes,
		Network: b.Network.code(),
	}
}

func budgetOf(w *wire.Budget) Budget {
	return Budget{
		IdleTTLMS: w.IdleTTLMS, MaxDurationMS: w.MaxDurationMS, MaxProcesses: w.MaxProcesses,
		MaxExecTimeoutMS: w.MaxExecTimeoutMS, OutputBufferBytes: w.OutputBufferBytes,
		MemoryBytes: w.MemoryBytes, Pids: w.Pids, CPUMillis: w.CPUMillis, DiskBytes: w.DiskBytes,
		Network: networkOf(w.Network),
	}
}

// BudgetRequest asks for the budget of a sandbox on create, or again after a reload
// (Reload true). The plugin also sees the operator's DefaultBudget and MaxBudget.
type BudgetRequest struct {
	Tenant    string            // tenant of the caller's token
	SandboxID string            // id of the sandbox
	Labels    map[string]string // labels of the sandbox
	Reload    bool              // true when asked again after a plugin reload
}

// RouteRequest asks whether one API request may be served.
type RouteRequest struct {
	Tenant    string            // tenant of the caller's token
	Method    string            // HTTP method
	Route     string            // route pattern, e.g. "POST /v1/sandboxes/{sb}/exec"
	SandboxID string            // sandbox id; empty on routes without one
	Labels    map[string]string // the sandbox's labels (at create: the requested ones)
	Command   []string          // argv for exec, process and session exec
}

// Decision is the answer to a [RouteRequest].
type Decision struct {
	// Allow is true when the request may be served.
	Allow bool
	// Status is the HTTP status of a denial: 403 when the plugin denied (a plugin that
	// leaves it 0 gets 403), 429 when it denied for a rate limit, 503 when the plugin
	// failed and the route hook fails closed.
	Status int
	// Reason is the human-readable reason of a denial, for the error message.
	Reason string
	// Pool is, at sandbox create, the label selector a node must match to own the
	// sandbox; nil means any node. It is stored with the sandbox, so it is bounded as
	// a sandbox's labels are: at most MaxPoolLabels labels, keys of at most
	// MaxPoolKeyBytes and values of at most MaxPoolValueBytes. A plugin that answers a
	// larger one has failed (ErrGarbage).
	Pool map[string]string
}

// Bounds of Decision.Pool, the same as the API's bounds of a sandbox's labels.
const (
	MaxPoolLabels     = 64
	MaxPoolKeyBytes   = 128
	MaxPoolValueBytes = 512
)

// checkPool reports a pool past the bounds of Decision.Pool.
func checkPool(pool map[string]string) error {
	if len(pool) > MaxPoolLabels {
		return fmt.Errorf("pool of %d labels, over the limit of %d", len(pool), MaxPoolLabels)
	}
	for k, v := range pool {
		if len(k) > MaxPoolKeyBytes || len(v) > MaxPoolValueBytes {
			return fmt.Errorf("pool label %.32q… of %d+%d bytes, over the limits of %d and %d",
				k, len(k), len(v), MaxPoolKeyBytes, MaxPoolValueBytes)
		}
	}
	return nil
}

// HTTPStatus returns the status the gateway answers for d: 200 when allowed, otherwise
// 403, 429 or 503.
func (d Decision) HTTPStatus() int {
	switch {
	case d.Allow:
		return http.StatusOK
	case d.Status == http.StatusTooManyRequests, d.Status == http.StatusServiceUnavailable:
		return d.Status
	default:
		return http.StatusForbidden
	}
}

// Code returns the API error code for a denial ("forbidden", "budget_exceeded" or
// "unavailable"), or "" when d allows.
func (d Decision) Code() string {
	switch d.HTTPStatus() {
	case http.StatusOK:
		return ""
	case http.StatusTooManyRequests:
		return "budget_exceeded"
	case http.StatusServiceUnavailable:
		return "unavailable"
	default:
		return "forbidden"
	}
}

// clamp narrows a plugin's budget to the operator's limits: zero fields take the
// default, everything is capped at the maximum (the network by its order).
func clamp(p, def, max Budget) Budget {
	f := func(v, d, m int64) int64 {
		if v <= 0 {
			v = d
		}
		return min(v, m)
	}
	return Budget{
		IdleTTLMS:         f(p.IdleTTLMS, def.IdleTTLMS, max.IdleTTLMS),
		MaxDurationMS:     f(p.MaxDurationMS, def.MaxDurationMS, max.MaxDurationMS),
		MaxProcesses:      f(p.MaxProcesses, def.MaxProcesses, max.MaxProcesses),
		MaxExecTimeoutMS:  f(p.MaxExecTimeoutMS, def.MaxExecTimeoutMS, max.MaxExecTimeoutMS),
		OutputBufferBytes: f(p.OutputBufferBytes, def.OutputBufferBytes, max.OutputBufferBytes),
		MemoryBytes:       f(p.MemoryBytes, def.MemoryBytes, max.MemoryBytes),
		Pids:              f(p.Pids, def.Pids, max.Pids),
		CPUMillis:         f(p.CPUMillis, def.CPUMillis, max.CPUMillis),
		DiskBytes:         f(p.DiskBytes, def.DiskBytes, max.DiskBytes),
		Network:           networkOf(byte(f(int64(p.Network.code()), int64(def.Network.code()), int64(max.Network.code())))),
	}
}
