package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder answers every request with a scripted reply and records the last request.
type recorder struct {
	status int
	body   string

	mu     sync.Mutex
	method string
	path   string
	query  string
	auth   string
	ctype  string
	got    []byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.method, r.path, r.query = req.Method, req.URL.EscapedPath(), req.URL.RawQuery
	r.auth, r.ctype, r.got = req.Header.Get("Authorization"), req.Header.Get("Content-Type"), b
	r.mu.Unlock()
	w.WriteHeader(r.status)
	io.WriteString(w, r.body)
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// The contract's example objects.
const (
	sandboxJSON = `{"id": "dev1", "state": "running", "node": "n2", "labels": {"tenant": "acme"},
 "created_at": "2026-11-22T02:00:00Z", "last_active_at": "2026-11-22T02:05:00Z",
 "budget": {"idle_ttl_ms": 900000, "max_duration_ms": 86400000, "max_processes": 64,
            "max_exec_timeout_ms": 600000, "output_buffer_bytes": 1048576,
            "memory_bytes": 536870912, "pids": 256, "cpu_millis": 1000,
            "disk_bytes": 1073741824, "network": "loopback"},
 "usage": {"memory_bytes": 12582912, "pids": 3, "disk_bytes": 81920},
 "counts": {"processes": 2, "sessions": 1, "terminals": 1}}`
	processJSON = `{"id": "proc_9f2c", "pid": 4242, "command": "npm run dev", "argv": null, "cwd": "/w",
 "pty": true, "tag": "web", "label": "Dev server", "session": null,
 "status": "running", "exit_code": null, "signal": null,
 "created_at": "2026-11-22T02:00:00Z", "exited_at": null, "output_offset": 18231, "output_dropped": 0}`
	execJSON = `{"exit_code": 0, "stdout": "x\n", "stderr": "", "duration_ms": 3, "timed_out": false, "truncated": false}`
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	type result = any
	ctx := context.Background()
	tests := []struct {
		name   string
		call   func(c *Client) (result, error)
		method string
		path   string
		query  string
		body   string // expected JSON body; "" for none, "raw:" prefix for raw bytes
		status int
		reply  string
		check  func(t *testing.T, r result)
	}{
		{"create sandbox", func(c *Client) (result, error) {
			sb, created, err := c.CreateSandbox(ctx, CreateSandboxRequest{ID: "dev1", Labels: map[string]string{"tenant": "acme"}})
			if err == nil && !created {
				t.Error("201 not reported as created")
			}
			return sb, err
		}, "POST", "/v1/sandboxes", "", `{"id":"dev1","labels":{"tenant":"acme"}}`, 201, sandboxJSON,
			func(t *testing.T, r result) {
				sb := r.(*Sandbox)
				want := Sandbox{ID: "dev1", State: SandboxRunning, Node: "n2", Labels: map[string]string{"tenant": "acme"},
					CreatedAt: time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC), LastActiveAt: time.Date(2026, 11, 22, 2, 5, 0, 0, time.UTC),
					Budget: Budget{IdleTTLMS: 900000, MaxDurationMS: 86400000, MaxProcesses: 64, MaxExecTimeoutMS: 600000, OutputBufferBytes: 1048576,
						MemoryBytes: 536870912, Pids: 256, CPUMillis: 1000, DiskBytes: 1073741824, Network: NetworkLoopback},
					Usage:  &Usage{MemoryBytes: 12582912, Pids: 3, DiskBytes: 81920},
					Counts: Counts{Processes: 2, Sessions: 1, Terminals: 1}}
				if !reflect.DeepEqual(*sb, want) {
					t.Errorf("sandbox = %+v\nwant %+v", *sb, want)
				}
			}},
		{"create existing sandbox", func(c *Client) (result, error) {
			_, created, err := c.CreateSandbox(ctx, CreateSandboxRequest{})
			return created, err
		}, "POST", "/v1/sandboxes", "", `{}`, 200, sandboxJSON,
			func(t *testing.T, r result) {
				if r.(bool) {
					t.Error("200 reported as created")
				}
			}},
		{"list sandboxes by label", func(c *Client) (result, error) {
			return c.ListSandboxes(ctx, &ListSandboxesOptions{Labels: map[string]string{"tenant": "acme", "a": "b"}})
		}, "GET", "/v1/sandboxes", "label=a%3Db&label=tenant%3Dacme", "", 200, `{"sandboxes":[` + sandboxJSON + `]}`,
			func(t *testing.T, r result) {
				if l := r.([]Sandbox); len(l) != 1 || l[0].ID != "dev1" {
					t.Errorf("got %+v", l)
				}
			}},
		{"get sandbox escapes id", func(c *Client) (result, error) { return c.GetSandbox(ctx, "a/b") },
			"GET", "/v1/sandboxes/a%2Fb", "", "", 200, sandboxJSON, nil},
		{"delete sandbox", func(c *Client) (result, error) { return nil, c.DeleteSandbox(ctx, "dev1") },
			"DELETE", "/v1/sandboxes/dev1", "", "", 204, "", nil},
		{"exec command", func(c *Client) (result, error) { return c.Exec(ctx, "dev1", ExecRequest{Command: "ls -la | wc -l"}) },
			"POST", "/v1/sandboxes/dev1/exec", "", `{"command": "ls -la | wc -l"}`, 200, execJSON,
			func(t *testing.T, r result) {
				if res := r.(*ExecResult); *res != (ExecResult{Stdout: "x\n", DurationMS: 3}) {
					t.Errorf("got %+v", res)
				}
			}},
		{"exec argv with options", func(c *Client) (result, error) {
			return c.Exec(ctx, "dev1", ExecRequest{Argv: []string{"ls", "-la"}, Cwd: "sub/dir", Env: map[string]string{"A": "1"}, TimeoutMS: 5000, Stdin: "text"})
		}, "POST", "/v1/sandboxes/dev1/exec", "", `{"argv": ["ls", "-la"], "cwd": "sub/dir", "env": {"A": "1"}, "timeout_ms": 5000, "stdin": "text"}`, 200, execJSON, nil},
		{"create process", func(c *Client) (result, error) {
			return c.CreateProcess(ctx, "dev1", CreateProcessRequest{Command: "npm run dev", PTY: &PTYSize{80, 24}, Tag: "web", Label: "Dev server", Session: "s1", TimeoutMS: 1, KeepMS: 2})
		}, "POST", "/v1/sandboxes/dev1/processes", "", `{"command":"npm run dev","pty":{"cols":80,"rows":24},"tag":"web","label":"Dev server","session":"s1","timeout_ms":1,"keep_ms":2}`, 201, processJSON,
			func(t *testing.T, r result) {
				p := r.(*Process)
				if p.ID != "proc_9f2c" || p.PID != 4242 || !p.PTY || p.Status != ProcessRunning || p.ExitCode != nil || p.Signal != nil || p.ExitedAt != nil || p.OutputOffset != 18231 || p.Argv != nil {
					t.Errorf("got %+v", p)
				}
			}},
		{"list processes filtered", func(c *Client) (result, error) {
			return c.ListProcesses(ctx, "dev1", &ListProcessesOptions{Status: ProcessExited, Tag: "web", Session: "s1"})
		}, "GET", "/v1/sandboxes/dev1/processes", "session=s1&status=exited&tag=web", "", 200, `{"processes":[]}`, nil},
		{"get process waits", func(c *Client) (result, error) {
			return c.GetProcess(ctx, "dev1", "proc_1", &GetProcessOptions{WaitMS: 1500})
		}, "GET", "/v1/sandboxes/dev1/processes/proc_1", "wait_ms=1500", "", 200,
			`{"id":"proc_1","status":"exited","exit_code":143,"signal":15,"exited_at":"2026-11-22T02:00:01Z","created_at":"2026-11-22T02:00:00Z"}`,
			func(t *testing.T, r result) {
				p := r.(*Process)
				if p.ExitCode == nil || *p.ExitCode != 143 || p.Signal == nil || *p.Signal != "15" || p.ExitedAt == nil {
					t.Errorf("got %+v", p)
				}
			}},
		{"delete process", func(c *Client) (result, error) { return nil, c.DeleteProcess(ctx, "dev1", "proc_1") },
			"DELETE", "/v1/sandboxes/dev1/processes/proc_1", "", "", 204, "", nil},
		{"signal by name", func(c *Client) (result, error) { return nil, c.SignalProcess(ctx, "dev1", "proc_1", "SIGINT") },
			"POST", "/v1/sandboxes/dev1/processes/proc_1/signal", "", `{"signal": "SIGINT"}`, 204, "", nil},
		{"signal by number", func(c *Client) (result, error) { return nil, c.SignalProcess(ctx, "dev1", "proc_1", "9") },
			"POST", "/v1/sandboxes/dev1/processes/proc_1/signal", "", `{"signal": 9}`, 204, "", nil},
		{"input bytes", func(c *Client) (result, error) {
			return nil, c.WriteProcessInput(ctx, "dev1", "proc_1", InputRequest{Data: []byte{0, 1, 0xff}})
		}, "POST", "/v1/sandboxes/dev1/processes/proc_1/input", "", `{"data": "AAH/"}`, 204, "", nil},
		{"input text", func(c *Client) (result, error) {
			return nil, c.WriteProcessInput(ctx, "dev1", "proc_1", InputRequest{Text: "hi\n"})
		}, "POST", "/v1/sandboxes/dev1/processes/proc_1/input", "", `{"text": "hi\n"}`, 204, "", nil},
		{"input eof", func(c *Client) (result, error) {
			return nil, c.WriteProcessInput(ctx, "dev1", "proc_1", InputRequest{EOF: true})
		}, "POST", "/v1/sandboxes/dev1/processes/proc_1/input", "", `{"eof": true}`, 204, "", nil},
		{"resize process", func(c *Client) (result, error) {
			return nil, c.ResizeProcess(ctx, "dev1", "proc_1", PTYSize{Cols: 120, Rows: 40})
		}, "POST", "/v1/sandboxes/dev1/processes/proc_1/resize", "", `{"cols": 120, "rows": 40}`, 204, "", nil},
		{"create session", func(c *Client) (result, error) {
			return c.CreateSession(ctx, "dev1", CreateSessionRequest{ID: "s1", Shell: "bash", TimeoutMS: 10})
		}, "POST", "/v1/sandboxes/dev1/sessions", "", `{"id":"s1","shell":"bash","timeout_ms":10}`, 201,
			`{"id":"s1","status":"ready","cwd":"/w","env":{"A":"1"},"created_at":"2026-11-22T02:00:00Z","last_command_at":null,"commands":0}`,
			func(t *testing.T, r result) {
				if s := r.(*Session); s.Status != SessionReady || s.Env["A"] != "1" || s.LastCommandAt != nil {
					t.Errorf("got %+v", s)
				}
			}},
		{"list sessions", func(c *Client) (result, error) { return c.ListSessions(ctx, "dev1") },
			"GET", "/v1/sandboxes/dev1/sessions", "", "", 200, `{"sessions":[{"id":"s1"}]}`, nil},
		{"get session", func(c *Client) (result, error) { return c.GetSession(ctx, "dev1", "s1") },
			"GET", "/v1/sandboxes/dev1/sessions/s1", "", "", 200, `{"id":"s1"}`, nil},
		{"get session, snapshot not saved", func(c *Client) (result, error) { return c.GetSession(ctx, "dev1", "s1") },
			"GET", "/v1/sandboxes/dev1/sessions/s1", "", "", 200, `{"id":"s1","snapshot_error":{"code":"too_large","message":"… (env_bytes)"}}`,
			func(t *testing.T, r result) {
				if e := r.(*Session).SnapshotError; e == nil || e.Code != "too_large" || !strings.Contains(e.Message, "env_bytes") {
					t.Errorf("snapshot error %+v", e)
				}
			}},
		{"session exec", func(c *Client) (result, error) {
			return c.ExecSession(ctx, "dev1", "s1", SessionExecRequest{Command: "cd /tmp"})
		}, "POST", "/v1/sandboxes/dev1/sessions/s1/exec", "", `{"command":"cd /tmp"}`, 200, execJSON,
			func(t *testing.T, r result) {
				if e := r.(*ExecResult).SnapshotError; e != nil {
					t.Errorf("snapshot error %+v in a reply without one", e)
				}
			}},
		{"session exec, snapshot not saved", func(c *Client) (result, error) {
			return c.ExecSession(ctx, "dev1", "s1", SessionExecRequest{Command: "export BIG=…"})
		}, "POST", "/v1/sandboxes/dev1/sessions/s1/exec", "", `{"command":"export BIG=…"}`, 200,
			`{"exit_code": 5, "stdout": "", "stderr": "", "duration_ms": 3, "timed_out": false, "truncated": false,
			  "snapshot_error": {"code": "too_large", "message": "… (env_value_bytes)"}}`,
			func(t *testing.T, r result) {
				res := r.(*ExecResult)
				if e := res.SnapshotError; res.ExitCode != 5 || e == nil || e.Code != "too_large" || !strings.Contains(e.Message, "env_value_bytes") {
					t.Errorf("result %+v, snapshot error %+v", res, e)
				}
			}},
		{"delete session", func(c *Client) (result, error) { return nil, c.DeleteSession(ctx, "dev1", "s1") },
			"DELETE", "/v1/sandboxes/dev1/sessions/s1", "", "", 204, "", nil},
		{"put terminal", func(c *Client) (result, error) {
			_, created, err := c.PutTerminal(ctx, "dev1", "main", PutTerminalRequest{Cols: 100, Rows: 30})
			return created, err
		}, "PUT", "/v1/sandboxes/dev1/terminals/main", "", `{"cols":100,"rows":30}`, 201,
			`{"id":"main","process":"proc_1","status":"running","cols":100,"rows":30,"created_at":"2026-11-22T02:00:00Z","attached":0,"output_offset":0}`,
			func(t *testing.T, r result) {
				if !r.(bool) {
					t.Error("201 not reported as created")
				}
			}},
		{"list terminals", func(c *Client) (result, error) { return c.ListTerminals(ctx, "dev1") },
			"GET", "/v1/sandboxes/dev1/terminals", "", "", 200, `{"terminals":[]}`, nil},
		{"get terminal", func(c *Client) (result, error) { return c.GetTerminal(ctx, "dev1", "main") },
			"GET", "/v1/sandboxes/dev1/terminals/main", "", "", 200, `{"id":"main","attached":2}`, nil},
		{"resize terminal", func(c *Client) (result, error) {
			return nil, c.ResizeTerminal(ctx, "dev1", "main", PTYSize{Cols: 1, Rows: 2})
		}, "POST", "/v1/sandboxes/dev1/terminals/main/resize", "", `{"cols":1,"rows":2}`, 204, "", nil},
		{"delete terminal", func(c *Client) (result, error) { return nil, c.DeleteTerminal(ctx, "dev1", "main") },
			"DELETE", "/v1/sandboxes/dev1/terminals/main", "", "", 204, "", nil},
		{"read file", func(c *Client) (result, error) { return c.ReadFile(ctx, "dev1", "a/b c.txt") },
			"GET", "/v1/sandboxes/dev1/files", "path=a%2Fb+c.txt", "", 200, "raw\x00bytes",
			func(t *testing.T, r result) {
				if string(r.([]byte)) != "raw\x00bytes" {
					t.Errorf("got %q", r)
				}
			}},
		{"list dir", func(c *Client) (result, error) { return c.ListDir(ctx, "dev1", ".") },
			"GET", "/v1/sandboxes/dev1/files", "path=.", "", 200,
			`{"entries":[{"name":"a","type":"dir","size":4096,"mode":493,"modified_at":"2026-11-22T02:00:00Z"},{"name":"b","type":"file","size":1,"mode":"0644","modified_at":"2026-11-22T02:00:00Z"}]}`,
			func(t *testing.T, r result) {
				e := r.([]DirEntry)
				if len(e) != 2 || e[0].Mode != 0o755 || e[1].Mode != 0o644 || e[0].Type != "dir" {
					t.Errorf("got %+v", e)
				}
			}},
		{"write file with mode", func(c *Client) (result, error) {
			return nil, c.WriteFile(ctx, "dev1", "a/b.txt", strings.NewReader("hello"), &WriteFileOptions{Mode: 0o600})
		}, "PUT", "/v1/sandboxes/dev1/files", "mode=0600&path=a%2Fb.txt", "raw:hello", 204, "", nil},
		{"delete file recursive", func(c *Client) (result, error) {
			return nil, c.DeleteFile(ctx, "dev1", "a", &DeleteFileOptions{Recursive: true})
		}, "DELETE", "/v1/sandboxes/dev1/files", "path=a&recursive=true", "", 204, "", nil},
		{"mkdir", func(c *Client) (result, error) {
			return nil, c.Mkdir(ctx, "dev1", MkdirRequest{Path: "a/b", Parents: true})
		}, "POST", "/v1/sandboxes/dev1/files/mkdir", "", `{"path": "a/b", "parents": true}`, 204, "", nil},
		{"list events", func(c *Client) (result, error) {
			return c.ListEvents(ctx, "dev1", &ListEventsOptions{Since: 4, Limit: 10})
		}, "GET", "/v1/sandboxes/dev1/events", "limit=10&since=4", "", 200,
			`{"events":[{"seq":5,"type":"process.exited","at":"2026-11-22T02:00:00Z","data":{"exit_code":0}}]}`,
			func(t *testing.T, r result) {
				e := r.([]Event)
				if len(e) != 1 || e[0].Seq != 5 || !sameJSON(string(e[0].Data), `{"exit_code":0}`) {
					t.Errorf("got %+v", e)
				}
			}},
		{"post event", func(c *Client) (result, error) {
			return c.PostEvent(ctx, "dev1", "agent.step", map[string]int{"n": 1})
		}, "POST", "/v1/sandboxes/dev1/events", "", `{"type": "agent.step", "data": {"n": 1}}`, 201, `{"seq": 12}`,
			func(t *testing.T, r result) {
				if r.(int64) != 12 {
					t.Errorf("seq = %v", r)
				}
			}},
		{"post message", func(c *Client) (result, error) {
			return c.PostMessage(ctx, "dev1", map[string]string{"do": "x"})
		}, "POST", "/v1/sandboxes/dev1/messages", "", `{"data": {"do": "x"}}`, 201, `{"id": "m1"}`,
			func(t *testing.T, r result) {
				if r.(string) != "m1" {
					t.Errorf("id = %v", r)
				}
			}},
		{"take messages", func(c *Client) (result, error) {
			return c.TakeMessages(ctx, "dev1", &TakeMessagesOptions{WaitMS: 2000, Max: 5, VisibilityMS: 60000})
		}, "GET", "/v1/sandboxes/dev1/messages", "max=5&visibility_ms=60000&wait_ms=2000", "", 200, `{"messages":[{"id":"m1","data":{"do":"x"},"attempts":2,"posted_at":"2026-11-22T02:00:00Z"}]}`,
			func(t *testing.T, r result) {
				if m := r.([]Message); len(m) != 1 || m[0].ID != "m1" || m[0].Attempts != 2 || m[0].PostedAt.IsZero() || string(m[0].Data) != `{"do":"x"}` {
					t.Errorf("got %+v", m)
				}
			}},
		{"ack message", func(c *Client) (result, error) { return nil, c.AckMessage(ctx, "dev1", "msg_1") },
			"DELETE", "/v1/sandboxes/dev1/messages/msg_1", "", "", 204, "", nil},
		{"ack messages", func(c *Client) (result, error) {
			return c.AckMessages(ctx, "dev1", []string{"msg_1", "msg_2"})
		}, "POST", "/v1/sandboxes/dev1/messages/ack", "", `{"ids": ["msg_1", "msg_2"]}`, 200, `{"acked": 1}`,
			func(t *testing.T, r result) {
				if r.(int) != 1 {
					t.Errorf("acked = %v", r)
				}
			}},
		{"cluster", func(c *Client) (result, error) { return c.GetCluster(ctx) },
			"GET", "/v1/cluster", "", "", 200,
			`{"node":"n1","leader":"n2","members":[{"id":"n1","raft_addr":"r:1","http_addr":"h:1","labels":{"zone":"a"},"status":"alive","voter":true,"partitions":4000},` +
				`{"id":"n2","raft_addr":"r:2","http_addr":"h:2","labels":{},"status":"alive","voter":false,"partitions":90}],` +
				`"term":3,"partitions":4096,"unassigned":6,"applied_index":77,"lease":{"valid":true,"until":"2026-11-22T02:00:03.5Z"}}`,
			func(t *testing.T, r result) {
				cl := r.(*Cluster)
				if cl.Leader != "n2" || cl.Term != 3 || len(cl.Members) != 2 || cl.Members[0].Status != "alive" || cl.Members[0].Labels["zone"] != "a" {
					t.Errorf("got %+v", cl)
				}
				if !cl.Members[0].Voter || cl.Members[0].Partitions != 4000 || cl.Members[1].Voter || cl.Members[1].Partitions != 90 || cl.Voters() != 1 {
					t.Errorf("members %+v", cl.Members)
				}
				until := time.Date(2026, 11, 22, 2, 0, 3, 5e8, time.UTC)
				if cl.Partitions != 4096 || cl.Unassigned != 6 || cl.AppliedIndex != 77 || !cl.Lease.Valid || !cl.Lease.Until.Equal(until) {
					t.Errorf("got %+v", cl)
				}
			}},
		{"cluster without a leader or a lease", func(c *Client) (result, error) { return c.GetCluster(ctx) },
			"GET", "/v1/cluster", "", "", 200,
			`{"node":"n3","leader":null,"members":[],"term":0,"partitions":4096,"unassigned":4096,"applied_index":0,"lease":{"valid":false,"until":null}}`,
			func(t *testing.T, r result) {
				if cl := r.(*Cluster); cl.Leader != "" || cl.Lease.Valid || !cl.Lease.Until.IsZero() || cl.Unassigned != 4096 {
					t.Errorf("got %+v", cl)
				}
			}},
		{"join", func(c *Client) (result, error) {
			return nil, c.JoinCluster(ctx, Member{ID: "n3", RaftAddr: "r:3", HTTPAddr: "h:3", Labels: map[string]string{"z": "b"}, Status: "alive", Voter: true, Partitions: 7})
		}, "POST", "/v1/cluster/join", "", `{"id":"n3","raft_addr":"r:3","http_addr":"h:3","labels":{"z":"b"}}`, 200, `{}`, nil},
		{"remove member", func(c *Client) (result, error) { return nil, c.RemoveMember(ctx, "n3") },
			"DELETE", "/v1/cluster/members/n3", "", "", 204, "", nil},
		{"drain member", func(c *Client) (result, error) { return nil, c.DrainMember(ctx, "n3") },
			"POST", "/v1/cluster/members/n3/drain", "", "", 202, "", nil},
		{"whoami", func(c *Client) (result, error) { return c.Whoami(ctx) },
			"GET", "/v1/whoami", "", "", 200, `{"tenant":"acme","admin":true,"sandboxes":2,"max_sandboxes":10}`,
			func(t *testing.T, r result) {
				if w := r.(*Whoami); *w != (Whoami{Tenant: "acme", Admin: true, Sandboxes: 2, MaxSandboxes: 10}) {
					t.Errorf("got %+v", w)
				}
			}},
		{"healthz", func(c *Client) (result, error) { return nil, c.Healthz(ctx) },
			"GET", "/healthz", "", "", 200, "ok", nil},
		{"metrics", func(c *Client) (result, error) { return c.Metrics(ctx) },
			"GET", "/metrics", "", "", 200, "# TYPE x counter\nx 1\n",
			func(t *testing.T, r result) {
				if string(r.([]byte)) != "# TYPE x counter\nx 1\n" {
					t.Errorf("got %q", r)
				}
			}},
		{"openapi", func(c *Client) (result, error) { return c.OpenAPI(ctx) },
			"GET", "/v1/openapi.json", "", "", 200, `{"openapi":"3.1.0"}`,
			func(t *testing.T, r result) {
				if string(r.([]byte)) != `{"openapi":"3.1.0"}` {
					t.Errorf("got %q", r)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{status: tt.status, body: tt.reply}
			c := newTestClient(t, rec, 0)
			res, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.method != tt.method || rec.path != tt.path || rec.query != tt.query {
				t.Errorf("request %s %s?%s, want %s %s?%s", rec.method, rec.path, rec.query, tt.method, tt.path, tt.query)
			}
			if rec.auth != "Bearer tok" {
				t.Errorf("Authorization = %q", rec.auth)
			}
			switch {
			case strings.HasPrefix(tt.body, "raw:"):
				if !bytes.Equal(rec.got, []byte(tt.body[4:])) || rec.ctype != "application/octet-stream" {
					t.Errorf("body %q (%s), want %q", rec.got, rec.ctype, tt.body[4:])
				}
			case tt.body == "":
				if len(rec.got) != 0 {
					t.Errorf("unexpected body %q", rec.got)
				}
			default:
				if !sameJSON(string(rec.got), tt.body) || rec.ctype != "application/json" {
					t.Errorf("body %s (%s), want %s", rec.got, rec.ctype, tt.body)
				}
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}
