package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/internal/proctest"
	"github.com/sandgate/sandgate/runtime"
)

const (
	testToken      = "test-token"
	testAdminToken = "admin-token"
	tokAcme        = "acme-token"
	tokGlobex      = "globex-token"
)

// testTokens are the tokens of test servers: testToken is a tenant's (not an admin's),
// testAdminToken an admin's of another tenant, so every test exercises the tenant path.
// tokAcme and tokGlobex are two more tenants' tokens, for tenancy tests.
func testTokens() map[string]Principal {
	return map[string]Principal{
		testToken:      {Tenant: "default"},
		testAdminToken: {Tenant: "admin", Admin: true},
		tokAcme:        {Tenant: "acme"},
		tokGlobex:      {Tenant: "globex"},
	}
}

// testServer is a real gateway on a loopback port with its own data directory.
type testServer struct {
	t      testing.TB
	srv    *Server
	url    string
	client *http.Client
}

type serverOptions struct {
	limits       actor.Budget
	maxPerTenant int // Config.MaxSandboxesPerTenant
	policy       RoutePolicy
	policyFile   string
	policyConfig string
	// wsWriteTimeout, when set, replaces the 10 s WebSocket write timeout.
	wsWriteTimeout time.Duration
	// config, when set, changes the configuration before the server is made.
	config func(*Config)
	// streamHoldBound, when set, replaces the 5 s bound of a live stream reader that
	// holds its process back.
	streamHoldBound time.Duration
	// inputTimeout, when set, replaces the 5 s bound on input to a process.
	inputTimeout time.Duration
	// shutdownGrace, when set, replaces the 10 s shutdown grace.
	shutdownGrace time.Duration
	// listen, when set, is the HTTP address instead of a free loopback port (a node
	// restarted on its old address).
	listen string
}

func newTestServer(t testing.TB, opts *serverOptions) *testServer {
	t.Helper()
	if opts == nil {
		opts = &serverOptions{}
	}
	addr := "127.0.0.1:0"
	if opts.listen != "" {
		addr = opts.listen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Listen:  ln.Addr().String(),
		DataDir: t.TempDir(),
		Tokens:  testTokens(),
		NodeID:  "n1",
		Limits:  opts.limits,
		// A one-node cluster that elects itself in tens of milliseconds.
		RaftMultiplier: 0.1,
		// Zero means the default.
		WSWriteTimeout:  opts.wsWriteTimeout,
		StreamHoldBound: opts.streamHoldBound,
		InputTimeout:    opts.inputTimeout,
		ShutdownGrace:   opts.shutdownGrace,
		Policy:          opts.policy,
		// A generous deadline: the suite runs on loaded 2-core machines under -race.
		PolicyFile: opts.policyFile, PolicyConfig: []byte(opts.policyConfig), PolicyTimeout: 2 * time.Second,
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxSandboxesPerTenant: opts.maxPerTenant, // zero means the default (1000)
		// The namespace driver where it works (as serve chooses); the local smoke run
		// sets $SANDGATE_TEST_RUNTIME=local.
		Runtime: os.Getenv("SANDGATE_TEST_RUNTIME"),
	}
	if opts.config != nil {
		opts.config(cfg)
	}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	ts := &testServer{t: t, srv: srv, url: "http://" + ln.Addr().String(), client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		ts.client.CloseIdleConnections()
	})
	return ts
}

// hostWorkspace is sandbox sb's workspace directory on the host.
func (ts *testServer) hostWorkspace(sb string) string {
	return filepath.Join(ts.srv.cfg.DataDir, "workspaces", sb)
}

// guestWorkspace is sandbox sb's workspace as its processes see it (what pwd prints).
func (ts *testServer) guestWorkspace(sb string) string {
	return runtime.GuestDir(ts.srv.driver, ts.hostWorkspace(sb))
}

// hostPID returns the host pid of the process that sandbox sb's processes know as pid
// (the pid the API reports): pid itself on the local runtime; on the namespace
// runtime the process of the pid namespace of sb's init (this process's child with
// the command line "sandgate-init sb") with that pid there, or -1 if none lives.
func (ts *testServer) hostPID(sb string, pid int) int {
	if !ts.isolated() {
		return pid
	}
	initPID := proctest.ChildByCmdline("/proc", os.Getpid(), "sandgate-init\x00"+sb+"\x00")
	if initPID < 0 {
		return -1
	}
	return proctest.HostPID("/proc", initPID, pid)
}

// isolated reports whether the server runs sandboxes on the namespace driver.
func (ts *testServer) isolated() bool { return ts.srv.driver.Name() == RuntimeNamespace }

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

func (r response) errorCode(t testing.TB) string {
	t.Helper()
	var e errorBody
	r.json(t, &e)
	if e.Error.Message == "" {
		t.Fatalf("error without message: %s", r.body)
	}
	return e.Error.Code
}

// do sends a request with the test token. body may be nil, a string (sent as is) or
// any value (sent as JSON).
func (ts *testServer) do(method, path string, body any) response {
	ts.t.Helper()
	return ts.doToken(testToken, method, path, body)
}

func (ts *testServer) doToken(token, method, path string, body any) response {
	ts.t.Helper()
	r, err := ts.send(token, method, path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return r
}

// send is doToken for goroutines other than the test's: it returns errors instead of
// failing the test, since t.Fatal must be called from the test goroutine.
func (ts *testServer) send(token, method, path string, body any) (response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		return response{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// must sends a request and fails the test unless the status is want.
func (ts *testServer) must(want int, method, path string, body any) response {
	ts.t.Helper()
	r := ts.do(method, path, body)
	if r.status != want {
		ts.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// sandbox creates a sandbox with the given id.
func (ts *testServer) sandbox(id string) {
	ts.t.Helper()
	// Set-up, not what a test checks: a create that met a raft election on a loaded
	// machine (503, its outcome unknown) is tried again, and a retry of one that did
	// land finds it (200, the same sandbox).
	var r response
	eventually(ts.t, time.Minute, "the create of sandbox "+id, func() bool {
		var err error
		r, err = ts.send(testToken, "POST", "/v1/sandboxes", map[string]any{"id": id})
		return err == nil && r.status != http.StatusServiceUnavailable
	})
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		ts.t.Fatalf("POST /v1/sandboxes: status %d, want 201: %s", r.status, r.body)
	}
}

// eventually polls cond until it holds or the bound passes.
func eventually(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
