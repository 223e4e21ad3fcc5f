package clustertest_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/linearize"
)

// visibility is how long a taken message stays hidden in these tests: short enough
// that unacknowledged messages come back within a run.
const visibility = 2 * time.Second

// dirs are directories every sandbox has, whatever its node kept of its workspace.
var dirs = []string{"/usr", "/etc", "/tmp", "/usr/bin", "/usr/share", "/usr/lib"}

// setup creates the sandbox through a and its session through b, and returns a
// client for them.
func setup(t *testing.T, c *clustertest.Cluster, a, b *clustertest.Node, sb string) *client {
	t.Helper()
	cl := &client{c: c, rec: linearize.NewRecorder(nil), sb: sb, ss: "s1"}
	if _, o := cl.do(a, "POST", "/v1/sandboxes", map[string]string{"id": sb}, http.StatusCreated); o != done {
		t.Fatalf("failed to create sandbox %s through %s: %v", sb, a.ID, cl.errors)
	}
	return cl.begin(t, b)
}

// adopt is setup for a sandbox that already exists (created by the test to land on
// a given node).
func adopt(t *testing.T, c *clustertest.Cluster, b *clustertest.Node, sb string) *client {
	t.Helper()
	cl := &client{c: c, rec: linearize.NewRecorder(nil), sb: sb, ss: "s1"}
	return cl.begin(t, b)
}

// begin creates the client's session through b and gives its registers their first
// values.
func (cl *client) begin(t *testing.T, b *clustertest.Node) *client {
	t.Helper()
	sb := cl.sb
	if _, o := cl.do(b, "POST", "/v1/sandboxes/"+sb+"/sessions", map[string]string{"id": cl.ss}, http.StatusCreated); o != done {
		t.Fatalf("failed to create session %s through %s: %v", cl.ss, b.ID, cl.errors)
	}
	// The registers start empty in the model: give them values before anyone reads.
	if !cl.cd(b, dirs[0]) || !cl.set(b, "v0") {
		t.Fatalf("failed to set the session's first directory and variable through %s: %v", b.ID, cl.errors)
	}
	return cl
}

// worker is one client loop: step runs one operation and reports whether it was
// answered as asked.
type worker struct {
	name string
	step func(i int) bool
}

// workers are the loops of a run: two on the session, two on the event log, two on
// the message queue, all concurrent, each through the nodes in turn.
func (cl *client) workers() []worker {
	return []worker{
		{"session writer", func(i int) bool {
			if i%2 == 0 {
				return cl.set(cl.node(), cl.token("v"))
			}
			return cl.cd(cl.node(), dirs[i%len(dirs)])
		}},
		{"session reader", func(int) bool { _, _, ok := cl.look(cl.node()); return ok }},
		{"appender", func(int) bool { return cl.append(cl.node()) }},
		{"log reader", func(i int) bool { return cl.read(cl.node(), uint64(i%3)) != nil }},
		{"producer", func(int) bool { return cl.post(cl.node()) }},
		{"consumer", func(i int) bool {
			ids := cl.take(cl.node(), 5, visibility, 0)
			if ids == nil {
				return false
			}
			if len(ids) > 0 && i%3 != 0 { // every third take leaves its messages to come back
				cl.ack(cl.node(), ids[:len(ids)/2+1])
			}
			return true
		}},
	}
}

// phase runs every worker until each has completed quota operations answered as
// asked, or until limit passes, which fails t: a cluster that answers nothing for so
// long is broken even if nothing it said was wrong. A test that ends first (a Fatal)
// stops the workers before its nodes are killed.
type phase struct {
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
	stalled atomic.Value // name of a worker that ran out of time
}

func (cl *client) startPhase(t *testing.T, quota int, limit time.Duration) *phase {
	p := &phase{stop: make(chan struct{})}
	deadline := time.Now().Add(limit)
	for _, w := range cl.workers() {
		p.wg.Go(func() {
			for i, ok := 0, 0; ok < quota; i++ {
				select {
				case <-p.stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					p.stalled.Store(w.name)
					return
				}
				if cl.c.Running() == nil || !w.step(i) {
					time.Sleep(50 * time.Millisecond) // back off while nodes are down: nothing to wait on
					continue
				}
				ok++
			}
		})
	}
	t.Cleanup(p.end)
	return p
}

// end stops the workers and waits for them.
func (p *phase) end() {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
}

func (p *phase) wait(t *testing.T) {
	t.Helper()
	p.wg.Wait()
	if name := p.stalled.Load(); name != nil {
		t.Errorf("worker %s did not complete its operations in time", name)
	}
}

// follow runs an event stream reader through the nodes in turn until the returned
// stop is called; a broken stream is resumed after the last seq it delivered.
func (cl *client) follow() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		var last uint64
		for ctx.Err() == nil {
			n := cl.node()
			ok := false
			if n != nil {
				sctx, scancel := context.WithTimeout(ctx, 3*time.Second) // each stream is one read: end it now and then
				last, ok = cl.stream(sctx, n, last)
				scancel()
			}
			if !ok {
				time.Sleep(50 * time.Millisecond) // back off while nodes are down: nothing to wait on
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// drain takes and acknowledges every message left, each take waiting long enough for
// a hidden message to come back, until a take finds none; then it reads the whole
// event log and the session, so the check sees the final state.
func (cl *client) drain(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the queue did not empty within 2 minutes")
		}
		ids := cl.take(cl.node(), 100, visibility, visibility+2*linearize.Slack+time.Second)
		if ids == nil {
			continue
		}
		if len(ids) == 0 {
			break
		}
		cl.ack(cl.node(), ids)
	}
	if cl.read(cl.node(), 0) == nil {
		t.Error("failed to read the event log at the end")
	}
	if _, _, ok := cl.look(cl.node()); !ok {
		t.Error("failed to read the session at the end")
	}
}

// check fails t when the cluster said something wrong: an error answer, or a
// history that is not linearizable.
func (cl *client) check(t *testing.T) {
	t.Helper()
	cl.mu.Lock()
	errs := cl.errors
	cl.mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d wrong answers:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	// Not t.TempDir: the rendering of a failing history must outlive the test.
	dir, err := os.MkdirTemp("", "linearize-"+cl.sb+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.rec.Check(&linearize.CheckOptions{VisualizeDir: dir}); err != nil {
		t.Errorf("%d operations recorded: %v", cl.rec.Len(), err)
	} else {
		_ = os.RemoveAll(dir)
	}
	t.Logf("%d operations recorded on %v: %d answered, %d refused, %d with an unknown outcome",
		cl.rec.Len(), cl.rec.Keys(), cl.outcomes[done].Load(), cl.outcomes[refused].Load(), cl.outcomes[unknown].Load())
}
