package sdk

import (
	"context"
	"net/http"
)

// ExecRequest is the body of a stateless exec. Exactly one of Command (run by
// /bin/sh -c) and Argv (run directly) is set.
type ExecRequest struct {
	Command string   `json:"command,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	// Cwd is relative to the sandbox workspace; empty means the sandbox default.
	Cwd string `json:"cwd,omitempty"`
	// Env is overlaid on the sandbox's env.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutMS bounds the run; 0 means the server default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Stdin is the command's standard input; empty means /dev/null.
	Stdin string `json:"stdin,omitempty"`
}

// ExecResult is the result of a stateless or session exec. A command that timed out
// is not an error: TimedOut is true and ExitCode is 124.
type ExecResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out"`
	Truncated  bool   `json:"truncated"`
	// SnapshotError is set only by ExecSession, when the command ran but its cwd and
	// exported env were not saved as the session's snapshot: the env is past the
	// server's bounds (1024 variables, 128 KiB a value, 1 MiB in all). After a restart
	// or a move the session comes back as after its last command within them.
	SnapshotError *SnapshotError `json:"snapshot_error,omitempty"`
}

// SnapshotError says why a session's cwd and env were not saved after a command. It is
// no error of the call: the command ran and its result is whole.
type SnapshotError struct {
	// Code is "too_large".
	Code string `json:"code"`
	// Message names the bound the env passed.
	Message string `json:"message"`
}

// Exec runs one command in sandbox sb and returns when it ends. Nothing persists
// between calls; use a session for that.
func (c *Client) Exec(ctx context.Context, sb string, req ExecRequest) (*ExecResult, error) {
	out := new(ExecResult)
	if _, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "exec"), body: req}, out); err != nil {
		return nil, err
	}
	return out, nil
}
