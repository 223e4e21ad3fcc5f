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
