package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startServerOn starts a gateway on dataDir, stopped at cleanup unless stop is called
// first (then stop waits for it).
func startServerOn(t testing.TB, dataDir string) (ts *testServer, stop func()) {
	t.Helper()
	return startServerWith(t, dataDir, nil)
}

// startServerWith is startServerOn with edit, when set, changing the configuration
// before the server is made.
func startServerWith(t testing.TB, dataDir string, edit func(*Config)) (ts *testServer, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Listen: ln.Addr().String(), DataDir: dataDir, NodeID: "n1", RaftMultiplier: 0.1,
		Tokens: testTokens(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if edit != nil {
		edit(cfg)
	}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	ts = &testServer{t: t, srv: srv, url: "http://" + ln.Addr().String(), client: &http.Client{Transport: &http.Transport{}}}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		ts.client.CloseIdleConnections()
	}
	t.Cleanup(stop)
	return ts, stop
}

// TestProcessKeptAcrossRestart: a process that exited, and one ended by the server's
// shutdown, stay listed as exited after a restart on the same data directory, until
// deleted; a deleted one stays deleted across another restart.
func TestProcessKeptAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts, stop := startServerOn(t, dir)
	ts.sandbox("kr")
	var done, run processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/kr/processes",
		map[string]any{"command": "printf hi; exit 2", "tag": "job", "keep_ms": 3600000}).json(t, &done)
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/kr/processes/"+done.ID+"?wait_ms=10000", nil).json(t, &done)
	if done.Status != "exited" {
		t.Fatalf("not exited: %+v", done)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/kr/processes", map[string]any{"argv": []string{"sleep", "300"}}).json(t, &run)
	stop()

	ts, stop = startServerOn(t, dir)
	var list struct{ Processes []processJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/kr/processes?status=exited", nil).json(t, &list)
	if len(list.Processes) != 2 {
		t.Fatalf("after restart: %+v", list.Processes)
	}
	d, r := list.Processes[0], list.Processes[1] // oldest first
	if d.ID != done.ID || d.ExitCode == nil || *d.ExitCode != 2 || d.Tag == nil || *d.Tag != "job" ||
		d.ExitedAt == nil || !d.ExitedAt.Equal(*done.ExitedAt) || d.OutputOffset != 2 || d.OutputDropped != 2 {
		t.Fatalf("exited before the restart: %+v", d)
	}
	if r.ID != run.ID || r.Status != "exited" || r.Signal == nil || r.ExitedAt == nil {
		t.Fatalf("ended by the restart: %+v", r)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/kr/processes?status=running", nil).json(t, &list)
	if len(list.Processes) != 0 {
		t.Fatalf("running after restart: %+v", list.Processes)
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/kr/processes/"+run.ID, nil)
	ts.must(http.StatusNotFound, "DELETE", "/v1/sandboxes/kr/processes/"+run.ID, nil)
	stop()

	ts, _ = startServerOn(t, dir)
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/kr/processes", nil).json(t, &list)
	if len(list.Processes) != 1 || list.Processes[0].ID != done.ID {
		t.Fatalf("after delete and restart: %+v", list.Processes)
	}
}

// TestCreateSameEffectiveSettings re-posts a sandbox and a session with their settings
// spelt differently: the defaults and cleaned paths are the same settings (200), a
// real difference is 409.
func TestCreateSameEffectiveSettings(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "es"})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes", map[string]any{"id": "es", "cwd": "."})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes", map[string]any{"id": "es", "cwd": "./", "labels": map[string]string{}})
	ts.must(http.StatusConflict, "POST", "/v1/sandboxes", map[string]any{"id": "es", "cwd": "sub"})

	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/es/sessions", map[string]any{"id": "n1"})
	for _, body := range []map[string]any{
		{"id": "n1", "shell": "bash"},
		{"id": "n1", "cwd": "."},
		{"id": "n1", "cwd": ""},
		{"id": "n1", "cwd": "./", "env": map[string]string{}},
	} {
		if r := ts.do("POST", "/v1/sandboxes/es/sessions", body); r.status != http.StatusOK {
			t.Fatalf("%v: %d %s", body, r.status, r.body)
		}
	}
	ts.must(http.StatusConflict, "POST", "/v1/sandboxes/es/sessions", map[string]any{"id": "n1", "env": map[string]string{"A": "1"}})
}

// TestExitedRecordStreams: after a restart, an exited process is only its saved record;
// GET answers it, and its output streams say what a drained ring would: a gap for
// asked-for bytes, then the exit (and, over WebSocket, ready first and a normal close).
func TestExitedRecordStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts, stop := startServerOn(t, dir)
	ts.sandbox("xr")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/xr/processes", map[string]any{"command": "printf abcd; exit 3"}).json(t, &p)
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/xr/processes/"+p.ID+"?wait_ms=10000", nil)
	stop()

	ts, _ = startServerOn(t, dir)
	var got processJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/xr/processes/"+p.ID+"?wait_ms=5000", nil).json(t, &got)
	if got.Status != "exited" || got.ExitCode == nil || *got.ExitCode != 3 || got.OutputOffset != 4 {
		t.Fatalf("saved record: %+v", got)
	}
	path := "/v1/sandboxes/xr/processes/" + p.ID
	evs := ts.readSSE(path+"/output?offset=1", "", 10*time.Second, lastIs("exit"))
	if len(evs) != 2 || evs[0].name != "gap" || evs[0].data != `{"from":1,"to":4}` || evs[1].data != `{"exit_code":3,"signal":null}` {
		t.Fatalf("SSE from offset 1: %+v", evs)
	}
	if evs := ts.readSSE(path+"/output", "", 10*time.Second, lastIs("exit")); len(evs) != 1 {
		t.Fatalf("SSE without an offset: %+v", evs)
	}
	c := ts.dialWS(path + "/ws?offset=0")
	if st := c.readUntil(t, 10*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusNormalClosure {
		t.Fatalf("close status %v", st)
	}
	if len(c.controls) != 3 || c.controls[0]["type"] != "ready" || c.controls[0]["offset"] != float64(0) ||
		c.controls[1]["type"] != "gap" || c.controls[2]["type"] != "exit" || c.controls[2]["exit_code"] != float64(3) {
		t.Fatalf("WebSocket messages: %v", c.controls)
	}
}
