package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) {
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close() // open the runtime's netpoller fds before leakcheck's baseline
	}
	leakcheck.Also(func() string { clustertest.Cleanup(); return "" })
	leakcheck.Main(m)
}

// fakeGateway implements the routes the CLI uses, on 127.0.0.1.
type fakeGateway struct {
	mu   sync.Mutex
	reqs []string // "METHOD path?query auth body"
	ws   []string // messages received on terminal WebSockets
	made []string // terminals made by PUT
}

func (g *fakeGateway) record(r *http.Request, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := ""
	if r.URL.RawQuery != "" {
		q = "?" + r.URL.RawQuery
	}
	g.reqs = append(g.reqs, fmt.Sprintf("%s %s%s %s %s", r.Method, r.URL.Path, q, r.Header.Get("Authorization"), body))
}

func (g *fakeGateway) requests() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.reqs, "\n")
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, msg)
}

func (g *fakeGateway) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sandboxes/sb1/processes", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		io.WriteString(w, `{"processes":[{"id":"proc_a","pid":10,"command":"sleep 9","status":"running","exit_code":null,"signal":null,"tag":"web"},
			{"id":"proc_b","pid":11,"argv":["false"],"status":"exited","exit_code":1,"signal":null}]}`)
	})
	mux.HandleFunc("GET /v1/sandboxes/sb1/processes/{p}", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		fmt.Fprintf(w, `{"id":%q,"status":"running","output_offset":6}`, r.PathValue("p"))
	})
	mux.HandleFunc("GET /v1/sandboxes/sb1/processes/{p}/output", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		w.Header().Set("Content-Type", "text/event-stream")
		chunks := []struct{ stream, data string }{{"stdout", "abc"}, {"stderr", "DEF"}, {"pty", "ghi"}}
		off := int64(0)
		if r.PathValue("p") == "proc_gap" {
			io.WriteString(w, "event: gap\ndata: {\"from\": 0, \"to\": 3}\n\n")
			chunks, off = chunks[1:], 3
		}
		for _, c := range chunks {
			fmt.Fprintf(w, "event: output\ndata: {\"stream\":%q,\"offset\":%d,\"data\":%q}\n\n", c.stream, off, base64.StdEncoding.EncodeToString([]byte(c.data)))
			off += int64(len(c.data))
		}
		io.WriteString(w, "event: exit\ndata: {\"exit_code\":0}\n\n")
	})
	mux.HandleFunc("GET /v1/sandboxes/{sb}", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		if r.PathValue("sb") != "sb1" {
			apiError(w, 404, "not_found", fmt.Sprintf("sandbox %q not found", r.PathValue("sb")))
			return
		}
		io.WriteString(w, `{"id":"sb1","state":"running"}`)
	})
	mux.HandleFunc("GET /v1/sandboxes/sb1/terminals/{t}", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		g.mu.Lock()
		made := slices.Contains(g.made, r.PathValue("t"))
		g.mu.Unlock()
		if r.PathValue("t") != "main" && r.PathValue("t") != "gappy" && !made {
			apiError(w, 404, "not_found", "no terminal")
			return
		}
		fmt.Fprintf(w, `{"id":%q,"process":"proc_t","status":"running"}`, r.PathValue("t"))
	})
	mux.HandleFunc("PUT /v1/sandboxes/sb1/terminals/{t}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		g.record(r, string(b))
		g.mu.Lock()
		g.made = append(g.made, r.PathValue("t"))
		g.mu.Unlock()
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"id":%q,"status":"running"}`, r.PathValue("t"))
	})
	mux.HandleFunc("GET /v1/sandboxes/sb1/terminals/{t}/ws", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		off := r.URL.Query().Get("offset")
		conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ready","offset":`+off+`}`))
		if r.PathValue("t") == "gappy" { // two bytes, three lost, two more, the exit
			conn.Write(ctx, websocket.MessageBinary, []byte("ab"))
			conn.Write(ctx, websocket.MessageText, []byte(`{"type":"gap","from":2,"to":5}`))
			conn.Write(ctx, websocket.MessageBinary, []byte("fg"))
			conn.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","exit_code":0}`))
			conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		conn.Write(ctx, websocket.MessageBinary, []byte("$ "))
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			g.mu.Lock()
			g.ws = append(g.ws, string(b))
			g.mu.Unlock()
			if typ == websocket.MessageBinary {
				conn.Write(ctx, websocket.MessageBinary, b) // echo
				if strings.Contains(string(b), "exit\r") {
					conn.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","exit_code":5}`))
					conn.Close(websocket.StatusNormalClosure, "")
					return
				}
			}
		}
	})
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		io.WriteString(w, `{"sandboxes":[{"id":"dev1","state":"running","node":"n2","labels":{"b":"2","a":"1"},"created_at":"2026-11-22T02:00:00Z","counts":{"processes":2}}]}`)
	})
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		io.WriteString(w, `{"node":"n1","leader":"n2","term":7,"partitions":4096,"unassigned":0,"applied_index":99,`+
			`"lease":{"valid":true,"until":"2026-11-22T02:00:03.5Z"},"members":[`+
			`{"id":"n1","raft_addr":"r1","http_addr":"h1","status":"alive","voter":false,"partitions":1024},`+
			`{"id":"n2","raft_addr":"r2","http_addr":"h2","status":"down","voter":true,"partitions":3072}]}`)
	})
	mux.HandleFunc("DELETE /v1/cluster/members/{id}", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		if id := r.PathValue("id"); id != "n2" {
			apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("member %q not found", id))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/cluster/members/{id}/drain", func(w http.ResponseWriter, r *http.Request) {
		g.record(r, "")
		if id := r.PathValue("id"); id != "n2" {
			apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("member %q not found", id))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return mux
}

// result is what one run of the program produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the program against a fresh fake gateway with the given stdin.
func runCLI(t *testing.T, stdin io.Reader, args ...string) (result, *fakeGateway) {
	t.Helper()
	g := &fakeGateway{}
	srv := httptest.NewServer(g.handler())
	t.Cleanup(srv.Close)
	env := map[string]string{"SANDGATE_ADDR": strings.TrimPrefix(srv.URL, "http://"), "SANDGATE_TOKEN": "secret"}
	return runWithEnv(t, env, stdin, args...), g
}

func runWithEnv(t *testing.T, vars map[string]string, stdin io.Reader, args ...string) result {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb strings.Builder
	e := &env{stdin: stdin, stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	code := dispatch(ctx, e, args)
	return result{code, out.String(), errb.String()}
}
