package sdk

import (
	"context"
	"net/http"
	"time"
)

// SessionStatus is ready, busy or dead.
type SessionStatus string

// The session statuses of the contract.
const (
	SessionReady SessionStatus = "ready"
	SessionBusy  SessionStatus = "busy"
	SessionDead  SessionStatus = "dead"
)

// CreateSessionRequest is the body of POST …/sessions. Every field is optional.
type CreateSessionRequest struct {
	ID        string            `json:"id,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Shell     string            `json:"shell,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// Session is the session object of the contract.
type Session struct {
	ID            string            `json:"id"`
	Status        SessionStatus     `json:"status"`
	Cwd           string            `json:"cwd"`
	Env           map[string]string `json:"env"`
	CreatedAt     time.Time         `json:"created_at"`
	LastCommandAt *time.Time        `json:"last_command_at"`
	Commands      int               `json:"commands"`
	// SnapshotError is set while the last command's cwd and env were not saved (its
	// env is past the bounds): Cwd and Env are then those of the last command within
	// them, which the session comes back with after a restart or a move.
	SnapshotError *SnapshotError `json:"snapshot_error,omitempty"`
}

// SessionExecRequest is the body of POST …/sessions/{s}/exec. Cwd and Env apply to
// this call only.
type SessionExecRequest struct {
	Command   string            `json:"command"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// CreateSession starts a persistent shell. Creating an id that exists replaces it if
// it is dead, returns it if the settings are identical, and is a conflict otherwise.
func (c *Client) CreateSession(ctx context.Context, sb string, req CreateSessionRequest) (*Session, error) {
	out := new(Session)
	if _, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "sessions"), body: req}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListSessions lists the sessions of sandbox sb.
func (c *Client) ListSessions(ctx context.Context, sb string) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "sessions")}, &out)
	return out.Sessions, err
}

// GetSession returns one session.
func (c *Client) GetSession(ctx context.Context, sb, session string) (*Session, error) {
	out := new(Session)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "sessions", session)}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ExecSession runs a command in a session and returns when it ends; cd, export and
// functions persist to the next command. A dead session is a conflict. A command
// whose exported env is past the server's bounds still returns its result, with
// SnapshotError set: its cwd and env were not saved.
func (c *Client) ExecSession(ctx context.Context, sb, session string, req SessionExecRequest) (*ExecResult, error) {
	out := new(ExecResult)
	if _, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "sessions", session, "exec"), body: req}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSession ends a session and the processes started from it.
func (c *Client) DeleteSession(ctx context.Context, sb, session string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb, "sessions", session)}, nil)
	return err
}
