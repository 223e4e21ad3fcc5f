package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ProcessStatus is running or exited.
type ProcessStatus string

// The process statuses of the contract.
const (
	ProcessRunning ProcessStatus = "running"
	ProcessExited  ProcessStatus = "exited"
)

// PTYSize is a terminal size in character cells.
type PTYSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// Signal is a signal as the server reports it. It decodes from a name ("SIGTERM") or
// a number (15), kept as its decimal text.
type Signal string

// UnmarshalJSON accepts a JSON string or number.
func (s *Signal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = Signal(v)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("sdk: signal is neither a string nor a number: %s", b)
	}
	*s = Signal(n.String())
	return nil
}

// CreateProcessRequest is the body of POST …/processes. Exactly one of Command and
// Argv is set; every other field is optional.
type CreateProcessRequest struct {
	Command string            `json:"command,omitempty"`
	Argv    []string          `json:"argv,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// PTY, when set, runs the process on a pseudo-terminal of that size.
	PTY   *PTYSize `json:"pty,omitempty"`
	Tag   string   `json:"tag,omitempty"`
	Label string   `json:"label,omitempty"`
	// Session starts the process from a snapshot of that session's cwd and env.
	Session   string `json:"session,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	// KeepMS is how long the exited record stays listed (server default 10 min).
	KeepMS int64 `json:"keep_ms,omitempty"`
}

// Process is the process object of the contract. Null fields decode to their zero
// value, except ExitCode, Signal and ExitedAt, which stay nil until the process exits.
type Process struct {
	ID            string        `json:"id"`
	PID           int           `json:"pid"`
	Command       string        `json:"command"`
	Argv          []string      `json:"argv"`
	Cwd           string        `json:"cwd"`
	PTY           bool          `json:"pty"`
	Tag           string        `json:"tag"`
	Label         string        `json:"label"`
	Session       string        `json:"session"`
	Status        ProcessStatus `json:"status"`
	ExitCode      *int          `json:"exit_code"`
	Signal        *Signal       `json:"signal"`
	CreatedAt     time.Time     `json:"created_at"`
	ExitedAt      *time.Time    `json:"exited_at"`
	OutputOffset  int64         `json:"output_offset"`
	OutputDropped int64         `json:"output_dropped"`
}

// ListProcessesOptions filters [Client.ListProcesses]; empty fields do not filter.
type ListProcessesOptions struct {
	Status  ProcessStatus
	Tag     string
	Session string
}

// GetProcessOptions tunes [Client.GetProcess].
type GetProcessOptions struct {
	// WaitMS makes the server wait up to this long for the process to exit before
	// answering.
	WaitMS int64
}

// InputRequest is the body of POST …/input. Set Data (sent base64) or Text, and EOF
// to close the process's stdin afterwards.
type InputRequest struct {
	Data []byte `json:"data,omitempty"`
	Text string `json:"text,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
}

// CreateProcess starts a process that outlives this call.
func (c *Client) CreateProcess(ctx context.Context, sb string, req CreateProcessRequest) (*Process, error) {
	out := new(Process)
	if _, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "processes"), body: req}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListProcesses lists the processes of sandbox sb. opts may be nil.
func (c *Client) ListProcesses(ctx context.Context, sb string, opts *ListProcessesOptions) ([]Process, error) {
	q := url.Values{}
	if opts != nil {
		setNonEmpty(q, "status", string(opts.Status))
		setNonEmpty(q, "tag", opts.Tag)
		setNonEmpty(q, "session", opts.Session)
	}
	var out struct {
		Processes []Process `json:"processes"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "processes"), query: q}, &out)
	return out.Processes, err
}

// GetProcess returns one process. With opts.WaitMS it waits for the exit first. opts
// may be nil.
func (c *Client) GetProcess(ctx context.Context, sb, proc string, opts *GetProcessOptions) (*Process, error) {
	q := url.Values{}
	if opts != nil && opts.WaitMS > 0 {
		q.Set("wait_ms", strconv.FormatInt(opts.WaitMS, 10))
	}
	out := new(Process)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "processes", proc), query: q}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteProcess ends a process (SIGTERM to its group, SIGKILL after 2 s) and removes
// its record.
func (c *Client) DeleteProcess(ctx context.Context, sb, proc string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb, "processes", proc)}, nil)
	return err
}

// SignalProcess sends a signal, by name ("SIGINT") or number ("2").
func (c *Client) SignalProcess(ctx context.Context, sb, proc, signal string) error {
	body := map[string]any{"signal": signal}
	if n, err := strconv.Atoi(signal); err == nil {
		body["signal"] = n
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "processes", proc, "signal"), body: body}, nil)
	return err
}

// WriteProcessInput writes to a process's stdin (or PTY), and closes stdin when
// req.EOF is set. Input to an exited process is a conflict.
func (c *Client) WriteProcessInput(ctx context.Context, sb, proc string, req InputRequest) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "processes", proc, "input"), body: req}, nil)
	return err
}

// ResizeProcess resizes the PTY of a process started with one.
func (c *Client) ResizeProcess(ctx context.Context, sb, proc string, size PTYSize) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "processes", proc, "resize"), body: size}, nil)
	return err
}

func setNonEmpty(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
