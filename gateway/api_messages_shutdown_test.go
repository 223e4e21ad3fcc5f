package gateway

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

// commitGate is the actors' storage with one commit held at a time: once armed with
// a marker, the first write of a batch whose records hold it tells entered that it
// began and waits for release.
type commitGate struct {
	actor.Storage
	mu      sync.Mutex
	marker  []byte // nil: not armed
	entered chan struct{}
	release chan struct{}
}

// arm holds the next commit whose records hold marker; open lets it go on.
func (g *commitGate) arm(marker string) (entered <-chan struct{}, open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.marker, g.entered, g.release = []byte(marker), make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := g.release
	return g.entered, func() { once.Do(func() { close(release) }) }
}

// Write implements actor.Storage.
func (g *commitGate) Write(ctx context.Context, b *actor.Batch) error {
	g.mu.Lock()
	held := g.marker != nil && holdsMarker(b, g.marker)
	entered, release := g.entered, g.release
	if held {
		g.marker = nil
	}
	g.mu.Unlock()
	if held {
		close(entered)
		<-release
	}
	return g.Storage.Write(ctx, b)
}

func holdsMarker(b *actor.Batch, marker []byte) bool {
	for _, op := range b.Ops {
		if bytes.Contains(op.Value, marker) {
			return true
		}
	}
	return false
}

// TestTakeUnderWayAtShutdown: the server starts to shut down while a take is under
// way: its turn hid a message and its commit waits, or it is queued behind another
// commit with the message visible. The take must not be answered 200 without the
// message: the client would think nothing was visible and nothing taken, while the
// message was hidden and came back later with attempts no answer showed, or was
// skipped (the history of a rolling restart was not linearizable for exactly that).
// It gets the message, or at worst an outcome it knows it does not know. Before the
// fix, the shutdown ended the take's context and the handler answered
// `{"messages": []}`: at once when the take was queued, and half the time when its
// own commit was held (the actor ran it on the handler's goroutine, which then saw
// its answer and the ended context together).
func TestTakeUnderWayAtShutdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// queued: a second post's commit is held, so the take waits in the mailbox;
		// otherwise the take's own commit is held.
		queued bool
	}{
		{name: "its commit held", queued: false},
		{name: "queued behind a commit", queued: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var gate *commitGate
			ts := newTestServer(t, &serverOptions{config: func(c *Config) {
				c.wrapStorage = func(s actor.Storage) actor.Storage {
					gate = &commitGate{Storage: s}
					return gate
				}
			}})
			ts.sandbox("sd1")
			msgs := "/v1/sandboxes/sd1/messages"
			ts.must(http.StatusCreated, "POST", msgs, map[string]any{"data": map[string]string{"k": "first"}})

			marker := "first" // the take's commit rewrites the first message
			if tc.queued {
				marker = "second"
			}
			entered, open := gate.arm(marker)
			defer open()
			posted := make(chan response, 1)
			if tc.queued {
				go func() {
					r, _ := ts.send(testToken, "POST", msgs, map[string]any{"data": map[string]string{"k": "second"}})
					posted <- r
				}()
				waitGate(t, entered, "the second post's commit")
			}
			got := make(chan response, 1)
			go func() {
				r, err := ts.send(testToken, "GET", msgs+"?visibility_ms=600000&wait_ms=5000", nil)
				if err != nil {
					r = response{status: 0, body: []byte(err.Error())} // the connection closed: an unknown outcome
				}
				got <- r
			}()
			if tc.queued {
				// The API gives no sign that the take reached the mailbox: a head start.
				// Should it come later, the assertions below hold all the same.
				time.Sleep(200 * time.Millisecond)
			} else {
				waitGate(t, entered, "the take's commit")
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
				open()
				r = <-got
			}
			open()
			if err := <-shut; err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if tc.queued {
				<-posted
			}
			t.Logf("the take was answered %d %s", r.status, r.body)
			var out struct {
				Messages []messageJSON `json:"messages"`
			}
			switch {
			case r.status == http.StatusOK:
				r.json(t, &out)
				if len(out.Messages) == 0 || out.Messages[0].Attempts != 1 || !bytes.Contains(out.Messages[0].Data, []byte("first")) {
					t.Fatalf("a take under way at shutdown answered 200 %s: the first message was visible to it, so it must return it", r.body)
				}
			case r.status == 0, r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "":
				// An outcome the client knows it does not know.
			default:
				t.Fatalf("a take under way at shutdown answered %d %s, want 200 with the message or an unknown outcome", r.status, r.body)
			}
		})
	}
}

// waitGate waits until a held commit began.
func waitGate(t *testing.T, entered <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never began", what)
	}
}
