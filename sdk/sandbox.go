package sdk

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// SandboxState is the lifecycle state of a sandbox.
type SandboxState string

// The sandbox states of the contract.
const (
	SandboxRunning    SandboxState = "running"
	SandboxHibernated SandboxState = "hibernated"
	SandboxExpired    SandboxState = "expired"
	SandboxFailed     SandboxState = "failed"
)

// Budget is what the policy decided for a sandbox. MemoryBytes, Pids, CPUMillis,
// DiskBytes and Network are enforced by the server's isolating runtime driver.
type Budget struct {
	IdleTTLMS         int64 `json:"idle_ttl_ms"`
	MaxDurationMS     int64 `json:"max_duration_ms"`
	MaxProcesses      int   `json:"max_processes"`
	MaxExecTimeoutMS  int64 `json:"max_exec_timeout_ms"`
	OutputBufferBytes int64 `json:"output_buffer_bytes"`
	// MemoryBytes is the memory all of the sandbox's processes may use together.
	MemoryBytes int64 `json:"memory_bytes"`
	// Pids is how many tasks (processes and threads) may exist in it at once.
	Pids int `json:"pids"`
	// CPUMillis is its CPU quota: 1000 is one core.
	CPUMillis int `json:"cpu_millis"`
	// DiskBytes is the size of its workspace.
	DiskBytes int64 `json:"disk_bytes"`
	// Network is NetworkNone, NetworkLoopback or NetworkHost.
	Network Network `json:"network"`
}

// Network is the network a sandbox may use.
type Network string

// The networks of the contract, from the narrowest.
const (
	NetworkNone     Network = "none"
	NetworkLoopback Network = "loopback"
	NetworkHost     Network = "host"
)

// Usage is what an active sandbox uses now.
type Usage struct {
	MemoryBytes int64 `json:"memory_bytes"`
	Pids        int   `json:"pids"`
	DiskBytes   int64 `json:"disk_bytes"`
}

// Counts is how many processes, sessions and terminals a sandbox has.
type Counts struct {
	Processes int `json:"processes"`
	Sessions  int `json:"sessions"`
	Terminals int `json:"terminals"`
}

// Sandbox is the sandbox object of the contract.
type Sandbox struct {
	ID           string            `json:"id"`
	State        SandboxState      `json:"state"`
	Node         string            `json:"node"`
	Labels       map[string]string `json:"labels"`
	CreatedAt    time.Time         `json:"created_at"`
	LastActiveAt time.Time         `json:"last_active_at"`
	Budget       Budget            `json:"budget"`
	// Usage is set only while the sandbox is active (in memory on its node).
	Usage  *Usage `json:"usage,omitempty"`
	Counts Counts `json:"counts"`
	// Tenant owns the sandbox: the tenant of the token that created it (an extension
	// of the contract).
	Tenant string `json:"tenant,omitempty"`
}

// CreateSandboxRequest is the body of POST /v1/sandboxes. Every field is optional.
type CreateSandboxRequest struct {
	// ID is the caller-chosen id; empty lets the server make one (sb_…).
	ID     string            `json:"id,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// Cwd is the default working directory, relative to the workspace.
	Cwd string `json:"cwd,omitempty"`
}

// ListSandboxesOptions filters [Client.ListSandboxes].
type ListSandboxesOptions struct {
	// Labels keeps the sandboxes carrying every one of these labels (?label=k=v each).
	Labels map[string]string
}

// CreateSandbox creates a sandbox. created is false when a sandbox with the same id
// and identical settings already existed (HTTP 200); different settings are a conflict.
func (c *Client) CreateSandbox(ctx context.Context, req CreateSandboxRequest) (sb *Sandbox, created bool, err error) {
	sb = new(Sandbox)
	status, err := c.do(ctx, request{method: http.MethodPost, path: []string{"v1", "sandboxes"}, body: req}, sb)
	if err != nil {
		return nil, false, err
	}
	return sb, status == http.StatusCreated, nil
}

// ListSandboxes lists sandboxes, optionally filtered by labels. opts may be nil.
func (c *Client) ListSandboxes(ctx context.Context, opts *ListSandboxesOptions) ([]Sandbox, error) {
	q := url.Values{}
	if opts != nil {
		keys := make([]string, 0, len(opts.Labels))
		for k := range opts.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q.Add("label", k+"="+opts.Labels[k])
		}
	}
	var out struct {
		Sandboxes []Sandbox `json:"sandboxes"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: []string{"v1", "sandboxes"}, query: q}, &out)
	return out.Sandboxes, err
}

// GetSandbox returns one sandbox.
func (c *Client) GetSandbox(ctx context.Context, sb string) (*Sandbox, error) {
	out := new(Sandbox)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb)}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSandbox deletes a sandbox: its process trees are killed, its storage removed.
func (c *Client) DeleteSandbox(ctx context.Context, sb string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb)}, nil)
	return err
}
