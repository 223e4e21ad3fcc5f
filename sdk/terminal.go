package sdk

import (
	"context"
	"net/http"
	"time"
)

// PutTerminalRequest is the body of PUT …/terminals/{t}. Every field is optional;
// they only matter when the terminal is created.
type PutTerminalRequest struct {
	Cols  int               `json:"cols,omitempty"`
	Rows  int               `json:"rows,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Shell string            `json:"shell,omitempty"`
}

// Terminal is the terminal object of the contract.
type Terminal struct {
	ID           string        `json:"id"`
	Process      string        `json:"process"`
	Status       ProcessStatus `json:"status"`
	Cols         int           `json:"cols"`
	Rows         int           `json:"rows"`
	CreatedAt    time.Time     `json:"created_at"`
	Attached     int           `json:"attached"`
	OutputOffset int64         `json:"output_offset"`
}

// PutTerminal gets or creates terminal id (exactly one PTY is made however many
// callers race). created tells which happened.
func (c *Client) PutTerminal(ctx context.Context, sb, id string, req PutTerminalRequest) (t *Terminal, created bool, err error) {
	t = new(Terminal)
	status, err := c.do(ctx, request{method: http.MethodPut, path: sbPath(sb, "terminals", id), body: req}, t)
	if err != nil {
		return nil, false, err
	}
	return t, status == http.StatusCreated, nil
}

// ListTerminals lists the terminals of sandbox sb.
func (c *Client) ListTerminals(ctx context.Context, sb string) ([]Terminal, error) {
	var out struct {
		Terminals []Terminal `json:"terminals"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "terminals")}, &out)
	return out.Terminals, err
}

// GetTerminal returns one terminal.
func (c *Client) GetTerminal(ctx context.Context, sb, id string) (*Terminal, error) {
	out := new(Terminal)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "terminals", id)}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ResizeTerminal resizes a terminal's PTY.
func (c *Client) ResizeTerminal(ctx context.Context, sb, id string, size PTYSize) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "terminals", id, "resize"), body: size}, nil)
	return err
}

// DeleteTerminal kills a terminal's shell; attached clients get exit, then a close.
func (c *Client) DeleteTerminal(ctx context.Context, sb, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb, "terminals", id)}, nil)
	return err
}
