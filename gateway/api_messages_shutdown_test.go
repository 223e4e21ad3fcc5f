package gateway

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

// commitGate is the actors' storage with one commit held: once armed, the first
// write of a batch whose records hold marker tells entered that it began and waits
// for release.
type commitGate struct {
	actor.Storage
	marker  []byte
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newCommitGate(s actor.Storage, marker string) *commitGate {
	return &commitGate{Storage: s, marker: []byte(marker), entered: make(chan struct{}), release: make(chan struct{})}
}

// Write implements actor.Storage.
func (g *commitGate) Write(ctx context.Context, b *actor.Batch) error {
	if g.armed.Load() && g.holdsMarker(b) && g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Storage.Write(ctx, b)
}

func (g *commitGate) holdsMarker(b *actor.Batch) bool {
	for _, op := range b.Ops {
		if bytes.Contains(op.Value, g.marker) {
			return true
		}
	}
	return false
}

// open lets the held commit go on; calling it again does nothing.
func (g *commitGate) open() { g.once.Do(func() { close(g.release) }) }

// TestTakeUnderWayAtShutdown: the server starts to shut down while a take's turn has
// hidden a message and its commit is under way. The take must not be answered 200
// without the message (the client would think nothing was taken, and the message
// would come back later with attempts that no answer showed: the history of a rolling
// restart was not linearizable for exactly that): it gets the message, or at worst an
// error whose outcome is unknown. Before the fix, the shutdown ended the take's
// context and the handler answered `{"messages": []}` at once.
func TestTakeUnderWayAtShutdown(t *testing.T) {
	t.Parallel()
	const marker = "take-at-shutdown"
	var gate *commitGate
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.wrapStorage = func(s actor.Storage) actor.Storage {
			gate = newCommitGate(s, marker)
			return gate
		}
	}})
	defer gate.open()
	ts.sandbox("sd1")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/sd1/messages", map[string]any{"data": map[string]string{"k": marker}})

	gate.armed.Store(true)
	got := make(chan response, 1)
	go func() {
		r, err := ts.send(testToken, "GET", "/v1/sandboxes/sd1/messages?visibility_ms=600000&wait_ms=5000", nil)
		if err != nil {
			r = response{status: 0, body: []byte(err.Error())} // the connection closed: an unknown outcome
		}
		got <- r
	}()
	select {
	case <-gate.entered: // the turn hid the message; its commit waits
	case <-time.After(30 * time.Second):
		t.Fatal("the take's commit never began")
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shut <- ts.srv.Shutdown(ctx)
	}()
	<-ts.srv.streamCtx.Done() // the shutdown began
	// A wrong answer needs no commit: give it the time to come out first. (Not a
	// synchronisation: a right answer waits for the commit whatever this waits.)
	var r response
	select {
	case r = <-got:
	case <-time.After(500 * time.Millisecond):
		gate.open()
		r = <-got
	}
	gate.open()
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	var out struct {
		Messages []messageJSON `json:"messages"`
	}
	switch {
	case r.status == http.StatusOK:
		r.json(t, &out)
		if len(out.Messages) != 1 || out.Messages[0].Attempts != 1 || !bytes.Contains(out.Messages[0].Data, []byte(marker)) {
			t.Fatalf("a take under way at shutdown answered 200 %s: its turn hid the message, so it must return it", r.body)
		}
	case r.status == 0, r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "":
		// An outcome the client knows it does not know.
	default:
		t.Fatalf("a take under way at shutdown answered %d %s, want 200 with the message or an unknown outcome", r.status, r.body)
	}
}
