package clustertest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/linearize"
)

// opTimeout bounds one client request: well past the 5 s a node holds a request
// while a partition has no owner, so a request that fails did not just wait.
const opTimeout = 20 * time.Second

// client drives one sandbox's session, event log and message queue through the nodes
// of a cluster and records every operation in rec. Safe for concurrent use.
type client struct {
	c   *clustertest.Cluster
	rec *linearize.Recorder
	sb  string // the sandbox
	ss  string // its session

	next     atomic.Uint64   // round robin over the nodes, and the source of unique tokens
	outcomes [3]atomic.Int64 // operations by outcome
	mu       sync.Mutex
	errors   []string // answers a correct cluster never gives (a 4xx to a valid request)
}

func (cl *client) envKey() string    { return "env/" + cl.sb + "/" + cl.ss + "/X" }
func (cl *client) cwdKey() string    { return "cwd/" + cl.sb + "/" + cl.ss }
func (cl *client) eventsKey() string { return "events/" + cl.sb }
func (cl *client) queueKey() string  { return "queue/" + cl.sb }

// token returns a string no other call returns.
func (cl *client) token(prefix string) string {
	return prefix + strconv.FormatUint(cl.next.Add(1), 10)
}

// node picks the next running node, round robin; nil when none runs.
func (cl *client) node() *clustertest.Node {
	nodes := cl.c.Running()
	if len(nodes) == 0 {
		return nil
	}
	return nodes[cl.next.Add(1)%uint64(len(nodes))]
}

// outcome is what a client can tell of a request's effect.
type outcome int

const (
	done    outcome = iota // answered as asked
	refused                // surely not applied: refused before it reached a server, or a 4xx
	unknown                // may or may not have been applied
)

// do sends one request to n and classifies the answer; a 4xx other than
// allowed is noted as an error of the cluster.
func (cl *client) do(n *clustertest.Node, method, path string, body any, want int, allowed ...int) (*clustertest.Response, outcome) {
	if n == nil {
		return nil, refused
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := n.Do(ctx, method, path, body)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, refused
	case err != nil:
		return nil, unknown
	case resp.Status == want:
		return resp, done
	case resp.Status >= 500:
		return resp, unknown
	}
	for _, a := range allowed {
		if resp.Status == a {
			return resp, done
		}
	}
	cl.fail("%s %s on %s: %d %s", method, path, n.ID, resp.Status, resp.Body)
	return resp, refused
}

func (cl *client) fail(format string, args ...any) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.errors = append(cl.errors, fmt.Sprintf(format, args...))
}

// finish records op's outcome (out when done) and counts it.
func (cl *client) finish(op *linearize.Op, o outcome, out any) {
	cl.outcomes[o].Add(1)
	switch o {
	case done:
		op.Return(out)
	case refused:
		op.Discard()
	default:
		op.Unknown()
	}
}

// execResult is a session exec's answer.
type execResult struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out"`
}

// exec runs command in the session through n.
func (cl *client) exec(n *clustertest.Node, command string) (execResult, outcome) {
	var r execResult
	resp, o := cl.do(n, "POST", "/v1/sandboxes/"+cl.sb+"/sessions/"+cl.ss+"/exec", map[string]string{"command": command}, http.StatusOK)
	if o != done {
		return r, o
	}
	if err := json.Unmarshal(resp.Body, &r); err != nil || r.TimedOut {
		return r, unknown
	}
	if r.ExitCode != 0 {
		cl.fail("session exec %q: exit %d: %s", command, r.ExitCode, r.Stderr)
		return r, unknown
	}
	return r, done
}

// set writes the session's variable X with export.
func (cl *client) set(n *clustertest.Node, v string) bool {
	op := cl.rec.Call(cl.envKey(), linearize.SetVar{Value: v})
	_, o := cl.exec(n, "export X="+v)
	cl.finish(op, o, nil)
	return o == done
}

// cd changes the session's directory to dir, one that exists in every sandbox.
func (cl *client) cd(n *clustertest.Node, dir string) bool {
	op := cl.rec.Call(cl.cwdKey(), linearize.SetVar{Value: dir})
	_, o := cl.exec(n, "cd "+dir)
	cl.finish(op, o, nil)
	return o == done
}

// look reads the session's directory and variable X in one command.
func (cl *client) look(n *clustertest.Node) (cwd, x string, ok bool) {
	cwdOp := cl.rec.Call(cl.cwdKey(), linearize.GetVar{})
	envOp := cl.rec.Call(cl.envKey(), linearize.GetVar{})
	r, o := cl.exec(n, `printf '%s\n%s\n' "$PWD" "$X"`)
	lines := strings.Split(r.Stdout, "\n")
	if o == done && len(lines) != 3 {
		cl.fail("session look: stdout %q", r.Stdout)
		o = unknown
	}
	if o != done {
		cl.finish(cwdOp, o, nil)
		cl.finish(envOp, o, nil)
		return "", "", false
	}
	cl.finish(cwdOp, o, linearize.Got{Value: lines[0]})
	cl.finish(envOp, o, linearize.Got{Value: lines[1]})
	return lines[0], lines[1], true
}

// append appends an agent.lin event whose data carries a fresh token; true when
// the append was acknowledged.
func (cl *client) append(n *clustertest.Node) bool {
	tok := cl.token("e")
	op := cl.rec.Call(cl.eventsKey(), linearize.Append{Type: "agent.lin", Data: tok})
	resp, o := cl.do(n, "POST", "/v1/sandboxes/"+cl.sb+"/events", map[string]any{"type": "agent.lin", "data": map[string]string{"k": tok}}, http.StatusCreated)
	var out struct{ Seq uint64 }
	if o == done && json.Unmarshal(resp.Body, &out) != nil {
		o = unknown
	}
	cl.finish(op, o, linearize.Appended{Seq: out.Seq})
	return o == done
}

// wireEvent is an event as the API renders it.
type wireEvent struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// event names a wire event the way Append named it: an agent.lin event by its
// token, any other by its data.
func (e wireEvent) event() linearize.Event {
	if e.Type == "agent.lin" {
		var d struct{ K string }
		_ = json.Unmarshal(e.Data, &d)
		return linearize.Event{Seq: e.Seq, Type: e.Type, Data: d.K}
	}
	var b bytes.Buffer
	_ = json.Compact(&b, e.Data)
	return linearize.Event{Seq: e.Seq, Type: e.Type, Data: b.String()}
}

// readLimit is the limit of a read of the event log: the events of these tests are
// small, so the page byte cap never ends a read first.
const readLimit = 1000

// read reads the event log after since, and returns what it read (nil on failure).
func (cl *client) read(n *clustertest.Node, since uint64) []wireEvent {
	op := cl.rec.Call(cl.eventsKey(), linearize.ReadLog{Since: since, Limit: readLimit})
	resp, o := cl.do(n, "GET", fmt.Sprintf("/v1/sandboxes/%s/events?since=%d&limit=%d", cl.sb, since, readLimit), nil, http.StatusOK)
	var out struct{ Events []wireEvent }
	if o == done && json.Unmarshal(resp.Body, &out) != nil {
		o = unknown
	}
	evs := make([]linearize.Event, 0, len(out.Events))
	for _, e := range out.Events {
		evs = append(evs, e.event())
	}
	cl.finish(op, o, linearize.LogRead{Events: evs})
	return out.Events
}

// stream follows the event stream through n from since until ctx ends or the stream
// breaks, and records what it saw as one read that claims nothing past its last
// event. It returns the last seq seen (since when none), and false when the stream
// could not be opened.
func (cl *client) stream(ctx context.Context, n *clustertest.Node, since uint64) (uint64, bool) {
	op := cl.rec.Call(cl.eventsKey(), linearize.ReadLog{Since: since})
	resp, err := n.Open(ctx, "GET", fmt.Sprintf("/v1/sandboxes/%s/events/stream?since=%d", cl.sb, since), nil)
	if err != nil {
		op.Discard()
		return since, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		op.Discard()
		return since, false
	}
	var evs []linearize.Event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e wireEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			cl.fail("event stream: %q: %v", data, err)
			break
		}
		evs = append(evs, e.event())
		since = e.Seq
	}
	op.Return(linearize.LogRead{Events: evs})
	return since, true
}
