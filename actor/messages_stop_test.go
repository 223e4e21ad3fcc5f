package actor

import (
	"context"
	"testing"
	"time"
)

// TestTakeStop: closing TakeOptions.Stop ends a take's long-poll with a definite
// empty answer, but never abandons a take turn already queued: that turn runs and
// its answer is the messages it hid, where a ctx that ended would have left the
// caller without them while they stayed hidden.
func TestTakeStop(t *testing.T) {
	t.Parallel()
	type res struct {
		msgs []Message
		err  error
	}
	for _, tc := range []struct {
		name string
		// stage posts what the case needs and starts take, then closes stop at the
		// point the case is about.
		stage func(t *testing.T, n *testNode, sb string, take func(), stop func())
		want  []string
	}{
		{
			name: "queued turn runs",
			stage: func(t *testing.T, n *testNode, sb string, take, stop func()) {
				postN(t, n, sb, 1)
				unblock := block(t, n, sb)
				take()
				eventually(t, 5*time.Second, "take queued", func() bool { return len(n.active(sb).mb) == 1 })
				stop()
				unblock()
			},
			want: []string{"msg_1/1"},
		},
		{
			name: "waiting take answers empty",
			stage: func(t *testing.T, n *testNode, sb string, take, stop func()) {
				postN(t, n, sb, 1)
				_, err := n.TakeMessages(tctx(t), sb, TakeOptions{Visibility: time.Hour})
				must(t, err)
				armed := n.clock.Pending()
				take()
				// The poll waits for the hidden message's visibility time on the fake
				// clock: its timer is the sign that it waits.
				eventually(t, 5*time.Second, "take waiting", func() bool { return n.clock.Pending() > armed })
				stop()
			},
			want: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newTestNode(t, nil)
			sb := "ts"
			mustCreate(t, n, sb)
			stopCh := make(chan struct{})
			took := make(chan res, 1)
			take := func() {
				go func() {
					m, err := n.TakeMessages(context.Background(), sb, TakeOptions{Wait: time.Hour, Stop: stopCh})
					took <- res{m, err}
				}()
			}
			tc.stage(t, n, sb, take, func() { close(stopCh) })
			select {
			case r := <-took:
				must(t, r.err)
				if r.msgs == nil {
					t.Fatal("a stopped take answered a nil slice, want an empty one")
				}
				wantMsgs(t, r.msgs, tc.want...)
			case <-time.After(30 * time.Second):
				t.Fatal("the take did not answer once stopped")
			}
		})
	}
}
