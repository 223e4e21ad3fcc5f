package actor

import (
	"fmt"
	"slices"
	"testing"
)

// TestRecreatedIDContinuesSeq: a sandbox deleted and created again under the same id
// continues after the old one's last seq (its final sandbox.deleted included) and
// never repeats a message id, also across a restart; a fresh node starts at seq 1, and
// the node-wide record is never listed as a sandbox.
func TestRecreatedIDContinuesSeq(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	if in := mustCreate(t, n, "other"); in.ID != "other" {
		t.Fatal(in)
	}
	if evs, err := n.Events(ctx, "other", 0, 0); err != nil || len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("fresh node's first events %+v, %v", evs, err)
	}
	mustCreate(t, n, "rc")
	last, err := n.PostEvent(ctx, "rc", "agent.step", nil)
	must(t, err)
	id1, err := n.PostMessage(ctx, "rc", []byte(`1`))
	must(t, err)
	sub, err := n.SubscribeEvents(ctx, "rc", last)
	must(t, err)
	defer sub.Close()
	must(t, n.DeleteSandbox(ctx, "rc"))
	deleted, err := sub.Next(ctx)
	must(t, err)
	if deleted.Type != "sandbox.deleted" || deleted.Seq != last+1 {
		t.Fatalf("final event %+v after seq %d", deleted, last)
	}
	mustCreate(t, n, "rc")
	evs, err := n.Events(ctx, "rc", deleted.Seq, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Type != "sandbox.created" || evs[0].Seq != deleted.Seq+1 {
		t.Fatalf("events of the new sandbox after seq %d: %+v", deleted.Seq, evs)
	}
	id2, err := n.PostMessage(ctx, "rc", []byte(`2`))
	must(t, err)
	if id2 == id1 {
		t.Fatalf("message id %s repeated", id2)
	}

	// Across a restart, and for a delete of another sandbox in between.
	must(t, n.DeleteSandbox(ctx, "rc"))
	closeNode(t, n)
	n2 := reopen(t, n.cfg, n.clock)
	mustCreate(t, n2, "rc")
	evs2, err := n2.Events(ctx, "rc", 0, 0)
	must(t, err)
	if len(evs2) != 1 || evs2[0].Seq <= evs[0].Seq+1 {
		t.Fatalf("events after restart %+v, old sandbox.created %d", evs2, evs[0].Seq)
	}
	id3, err := n2.PostMessage(ctx, "rc", []byte(`3`))
	must(t, err)
	if id3 == id1 || id3 == id2 {
		t.Fatalf("message id %s repeated (%s, %s)", id3, id1, id2)
	}
	list, err := n2.ListSandboxes(ctx, nil)
	must(t, err)
	if len(list) != 2 {
		t.Fatalf("listed %+v", list)
	}
}

// TestSeqBaseHammer: sandboxes deleted concurrently all raise the node's base; a
// sandbox created after them starts above every seq and message number they used.
func TestSeqBaseHammer(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	const workers = 8
	lastSeq := make([]uint64, workers)
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				id := fmt.Sprintf("h%d", w)
				for range 3 {
					if _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: id}); err != nil {
						return err
					}
					for range w + 1 {
						seq, err := n.PostEvent(ctx, id, "agent.x", nil)
						if err != nil {
							return err
						}
						lastSeq[w] = max(lastSeq[w], seq+1) // +1: the sandbox.deleted
					}
					if _, err := n.PostMessage(ctx, id, nil); err != nil {
						return err
					}
					if err := n.DeleteSandbox(ctx, id); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		must(t, <-errs)
	}
	mustCreate(t, n, "after")
	evs, err := n.Events(ctx, "after", 0, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Seq <= slices.Max(lastSeq) {
		t.Fatalf("first event %+v, deleted sandboxes reached seq %d", evs, slices.Max(lastSeq))
	}
}
