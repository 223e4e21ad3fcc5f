package gateway

import (
	"encoding/base64"
	"time"
	"unicode/utf8"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// This file turns our packages' values into the JSON objects of the HTTP API (gateway/openapi.json).

type budgetJSON struct {
	IdleTTLMs         int64  `json:"idle_ttl_ms"`
	MaxDurationMs     int64  `json:"max_duration_ms"`
	MaxProcesses      int    `json:"max_processes"`
	MaxExecTimeoutMs  int64  `json:"max_exec_timeout_ms"`
	OutputBufferBytes int    `json:"output_buffer_bytes"`
	MemoryBytes       int64  `json:"memory_bytes"`
	Pids              int    `json:"pids"`
	CPUMillis         int    `json:"cpu_millis"`
	DiskBytes         int64  `json:"disk_bytes"`
	Network           string `json:"network"`
}

// usageJSON is present on a sandbox only while it is active.
type usageJSON struct {
	MemoryBytes int64 `json:"memory_bytes"`
	Pids        int   `json:"pids"`
	DiskBytes   int64 `json:"disk_bytes"`
}

type countsJSON struct {
	Processes int `json:"processes"`
	Sessions  int `json:"sessions"`
	Terminals int `json:"terminals"`
}

type sandboxJSON struct {
	ID           string            `json:"id"`
	State        string            `json:"state"`
	Node         string            `json:"node"`
	Labels       map[string]string `json:"labels"`
	Pool         map[string]string `json:"pool"`
	Tenant       string            `json:"tenant"`
	CreatedAt    time.Time         `json:"created_at"`
	LastActiveAt time.Time         `json:"last_active_at"`
	Budget       budgetJSON        `json:"budget"`
	Usage        *usageJSON        `json:"usage,omitempty"`
	Counts       countsJSON        `json:"counts"`
	FailedReason string            `json:"failed_reason,omitempty"`
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func renderBudget(b actor.Budget) budgetJSON {
	return budgetJSON{
		IdleTTLMs: ms(b.IdleTTL), MaxDurationMs: ms(b.MaxDuration), MaxProcesses: b.MaxProcesses,
		MaxExecTimeoutMs: ms(b.MaxExecTimeout), OutputBufferBytes: b.OutputBufferBytes,
		MemoryBytes: b.MemoryBytes, Pids: b.Pids, CPUMillis: b.CPUMillis, DiskBytes: b.DiskBytes,
		Network: string(b.Network),
	}
}

func renderSandbox(i actor.SandboxInfo) sandboxJSON {
	var usage *usageJSON
	if u := i.Usage; u != nil {
		usage = &usageJSON{MemoryBytes: u.MemoryBytes, Pids: u.Pids, DiskBytes: u.DiskBytes}
	}
	return sandboxJSON{
		ID: i.ID, State: i.State, Node: i.Node, Labels: nonNilMap(i.Labels), Pool: i.Pool,
		Tenant: i.Tenant, CreatedAt: i.CreatedAt.UTC(), LastActiveAt: i.LastActiveAt.UTC(),
		Budget: renderBudget(i.Budget), Usage: usage,
		Counts:       countsJSON{Processes: i.Counts.Processes, Sessions: i.Counts.Sessions, Terminals: i.Counts.Terminals},
		FailedReason: i.FailReason,
	}
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

type execJSON struct {
	ExitCode     int    `json:"exit_code"`
	Stdout       string `json:"stdout"`
	Stderr       string `json:"stderr"`
	StdoutBase64 string `json:"stdout_base64,omitempty"`
	StderrBase64 string `json:"stderr_base64,omitempty"`
	DurationMs   int64  `json:"duration_ms"`
	TimedOut     bool   `json:"timed_out"`
	Truncated    bool   `json:"truncated"`
}

// renderExec keeps output byte-exact: JSON strings cannot carry invalid UTF-8, so such
// output also comes as base64 (an extension documented in openapi.json).
func renderExec(r runtime.ExecResult) execJSON {
	out := execJSON{
		ExitCode: r.ExitCode, Stdout: string(r.Stdout), Stderr: string(r.Stderr),
		DurationMs: ms(r.Duration), TimedOut: r.TimedOut, Truncated: r.Truncated,
	}
	if !utf8.Valid(r.Stdout) {
		out.StdoutBase64 = base64.StdEncoding.EncodeToString(r.Stdout)
	}
	if !utf8.Valid(r.Stderr) {
		out.StderrBase64 = base64.StdEncoding.EncodeToString(r.Stderr)
	}
	return out
}

// sessionExecJSON is a session command's result: an exec result and, when the
// command's cwd and env were not saved as the session's snapshot (its exported env was
// past the bounds), why (an extension). The command itself ran: it is not an error.
type sessionExecJSON struct {
	execJSON
	SnapshotError *errorJSON `json:"snapshot_error,omitempty"`
}

func renderSessionExec(r runtime.ExecResult) sessionExecJSON {
	out := sessionExecJSON{execJSON: renderExec(r)}
	if r.SnapshotErr != nil {
		out.SnapshotError = &errorJSON{Code: codeTooLarge, Message: humanMessage(r.SnapshotErr)}
	}
	return out
}

type processJSON struct {
	ID            string     `json:"id"`
	PID           int        `json:"pid"`
	Command       *string    `json:"command"`
	Argv          []string   `json:"argv"`
	Cwd           string     `json:"cwd"`
	PTY           bool       `json:"pty"`
	Tag           *string    `json:"tag"`
	Label         *string    `json:"label"`
	Session       *string    `json:"session"`
	Status        string     `json:"status"`
	ExitCode      *int       `json:"exit_code"`
	Signal        *string    `json:"signal"`
	CreatedAt     time.Time  `json:"created_at"`
	ExitedAt      *time.Time `json:"exited_at"`
	OutputOffset  int64      `json:"output_offset"`
	OutputDropped int64      `json:"output_dropped"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func renderProcess(i runtime.ProcessInfo) processJSON {
	p := processJSON{
		ID: i.ID, PID: i.PID, Command: optString(i.Command), Argv: i.Argv, Cwd: i.Cwd, PTY: i.PTY,
		Tag: optString(i.Tag), Label: optString(i.Label), Session: optString(i.Session),
		Status: string(i.Status), CreatedAt: i.CreatedAt.UTC(),
		OutputOffset: i.OutputOffset, OutputDropped: i.OutputDropped,
	}
	if i.Exit != nil {
		p.ExitCode, p.Signal = exitFields(*i.Exit)
	}
	if i.ExitedAt != nil {
		t := i.ExitedAt.UTC()
		p.ExitedAt = &t
	}
	return p
}

// exitFields renders an exit status: a process killed by a signal has a null exit code
// and the signal's name.
func exitFields(e runtime.ExitStatus) (*int, *string) {
	if e.Signal != "" {
		sig := e.Signal
		return nil, &sig
	}
	code := e.Code
	return &code, nil
}

type sessionJSON struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Cwd           string            `json:"cwd"`
	Env           map[string]string `json:"env"`
	CreatedAt     time.Time         `json:"created_at"`
	LastCommandAt *time.Time        `json:"last_command_at"`
	Commands      int               `json:"commands"`
	DeadReason    string            `json:"dead_reason,omitempty"`
	// SnapshotError says why the session's cwd and env are not those after its last
	// command: that command's exported env was past the bounds, so its snapshot was
	// not saved (an extension).
	SnapshotError *errorJSON `json:"snapshot_error,omitempty"`
}

func renderSession(i runtime.SessionInfo) sessionJSON {
	s := sessionJSON{
		ID: i.ID, Status: string(i.Status), Cwd: i.Cwd, Env: nonNilMap(i.Env),
		CreatedAt: i.CreatedAt.UTC(), Commands: i.Commands, DeadReason: i.DeadReason,
	}
	if i.SnapshotError != "" {
		s.SnapshotError = &errorJSON{Code: codeTooLarge, Message: i.SnapshotError}
	}
	if i.LastCommandAt != nil {
		t := i.LastCommandAt.UTC()
		s.LastCommandAt = &t
	}
	return s
}

// terminalJSON is the terminal object. Process is null while no shell runs in this
// activation (after hibernation or a restart); status is then "exited".
type terminalJSON struct {
	ID           string    `json:"id"`
	Process      *string   `json:"process"`
	Status       string    `json:"status"`
	Cols         uint16    `json:"cols"`
	Rows         uint16    `json:"rows"`
	CreatedAt    time.Time `json:"created_at"`
	Attached     int       `json:"attached"`
	OutputOffset int64     `json:"output_offset"`
}

func renderTerminal(i actor.TerminalInfo) terminalJSON {
	return terminalJSON{
		ID: i.ID, Process: optString(i.Process), Status: i.Status, Cols: i.Cols, Rows: i.Rows,
		CreatedAt: i.CreatedAt.UTC(), Attached: i.Attached, OutputOffset: i.OutputOffset,
	}
}

type eventJSON struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	Data any       `json:"data"`
}

// renderEvent gives every event an object as data: {} when there is nothing to say.
func renderEvent(e actor.Event) eventJSON {
	var data any = e.Data
	if len(e.Data) == 0 || string(e.Data) == "null" {
		data = map[string]any{}
	}
	return eventJSON{Seq: e.Seq, Type: e.Type, At: e.At.UTC(), Data: data}
}

// nonNilSlice returns s, or an empty slice for nil (JSON [] rather than null).
func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
