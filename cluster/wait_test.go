package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestWaitApplied waits on a follower for a pin committed on the leader, and checks
// the already-reached, context-ended and closed cases.
func TestWaitApplied(t *testing.T) {
	nodes := cluster(t, 2)
	l := leader(t, nodes...)
	f := nodes[0]
	if f == l {
		f = nodes[1]
	}
	bg := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"already reached", func(t *testing.T) {
			if err := f.WaitApplied(bg, f.TableIndex()); err != nil {
				t.Fatal(err)
			}
		}},
		{"waits for a later entry", func(t *testing.T) {
			changed := f.TableChanged()
			var a Assignment
			if err := onLeader(t, nodes, func(l *Node) (err error) {
				a, err = l.Pin(bg, "sb-wait", nil)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, patience)
			defer cancel()
			if err := f.WaitApplied(ctx, a.Epoch); err != nil {
				t.Fatal(err)
			}
			if owner, epoch, ok := f.Owner("sb-wait"); !ok || epoch < a.Epoch {
				t.Fatalf("after WaitApplied(%d) the follower sees %s@%d (ok %v)", a.Epoch, owner, epoch, ok)
			}
			select {
			case <-changed:
			default:
				t.Fatal("TableChanged was not closed by the pin")
			}
		}},
		{"context ends first", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
			defer cancel()
			err := f.WaitApplied(ctx, f.TableIndex()+1<<40)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want DeadlineExceeded", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// TestWaitAppliedClosed: a wait ends with ErrClosed when its node closes.
func TestWaitAppliedClosed(t *testing.T) {
	n := cluster(t, 1)[0]
	done := make(chan error, 1)
	go func() { done <- n.WaitApplied(context.Background(), n.TableIndex()+1<<40) }()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v, want ErrClosed", err)
		}
	case <-time.After(patience):
		t.Fatal("WaitApplied did not return after Close")
	}
}

// heldFuture is a raft future that raft has not answered (yet): its Error blocks
// until answer is closed. Raft leaves such a future unanswered for good when it
// shuts down with the entry still queued for its FSM, which a test cannot bring
// about on purpose.
type heldFuture struct {
	answer chan struct{}
	err    error
}

func (f *heldFuture) Error() error {
	<-f.answer
	return f.err
}

// TestFutureErrorEndsAtShutdown checks that a wait on a raft future ends when the
// node shuts raft down even if raft never answers, and that an answer before that
// is returned as it is.
func TestFutureErrorEndsAtShutdown(t *testing.T) {
	n := &Node{raftDown: make(chan struct{})}
	answered := &heldFuture{answer: make(chan struct{}), err: raft.ErrLeadershipLost}
	close(answered.answer)
	if err := n.futureError(answered); !errors.Is(err, raft.ErrLeadershipLost) {
		t.Fatalf("answered future: %v, want %v", err, raft.ErrLeadershipLost)
	}

	held := &heldFuture{answer: make(chan struct{})}
	t.Cleanup(func() { close(held.answer) })
	got := make(chan error, 1)
	go func() { got <- n.futureError(held) }()
	select {
	case err := <-got:
		t.Fatalf("futureError returned %v before raft answered or shut down", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(n.raftDown)
	select {
	case err := <-got:
		if !errors.Is(err, raft.ErrRaftShutdown) {
			t.Fatalf("after shutdown: %v, want %v", err, raft.ErrRaftShutdown)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("futureError still waits after the node shut raft down")
	}
}
