package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestKeptLimitsConfig: Config.SessionLimit, TerminalLimit and ExitedLimit (serve's
// --max-sessions, --max-terminals, --max-exited-processes) replace the defaults: a
// session or terminal past them is 429 budget_exceeded naming the bound and its value,
// and only the newest exited records stay listed.
func TestKeptLimitsConfig(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.SessionLimit, c.TerminalLimit, c.ExitedLimit = 1, 1, 1
	}})
	ts.sandbox("kc")
	sb := "/v1/sandboxes/kc"
	ts.must(http.StatusCreated, "POST", sb+"/sessions", map[string]any{"id": "s1"})
	ts.must(http.StatusCreated, "PUT", sb+"/terminals/t1", map[string]any{})
	tests := []struct {
		name, method, path, limit string
		body                      map[string]any
	}{
		{"session", "POST", sb + "/sessions", "max_sessions", map[string]any{"id": "s2"}},
		{"terminal", "PUT", sb + "/terminals/t2", "max_terminals", map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != http.StatusTooManyRequests || r.errorCode(t) != codeBudgetExceeded ||
				!strings.Contains(string(r.body), tt.limit) || !strings.Contains(string(r.body), "1") {
				t.Fatalf("%s past a limit of 1: %d %s", tt.name, r.status, r.body)
			}
		})
	}

	var ids []string
	for range 2 {
		var p processJSON
		ts.must(http.StatusCreated, "POST", sb+"/processes", map[string]any{"argv": []string{"true"}}).json(t, &p)
		ts.must(http.StatusOK, "GET", sb+"/processes/"+p.ID+"?wait_ms=30000", nil).json(t, &p)
		if p.Status != "exited" {
			t.Fatalf("process %s did not exit: %+v", p.ID, p)
		}
		ids = append(ids, p.ID)
	}
	var list struct{ Processes []processJSON }
	ts.must(http.StatusOK, "GET", sb+"/processes?status=exited", nil).json(t, &list)
	var exited []string
	for _, p := range list.Processes {
		if !strings.HasPrefix(deref(p.Tag), "terminal:") {
			exited = append(exited, p.ID)
		}
	}
	if len(exited) != 1 || exited[0] != ids[1] {
		t.Fatalf("exited records %v, want only the newest, %s", exited, ids[1])
	}
}

// TestKeptLimitsConfigInvalid: a negative limit is refused at New with ErrConfig.
func TestKeptLimitsConfigInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{ExitedLimit: -1}, {SessionLimit: -1}, {TerminalLimit: -1}} {
		c.DataDir, c.Listen = t.TempDir(), "127.0.0.1:0"
		srv, err := New(context.Background(), &c)
		if err == nil {
			_ = srv.Shutdown(context.Background())
			t.Fatalf("New(%+v) started", c)
		}
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("New = %v, want ErrConfig", err)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
