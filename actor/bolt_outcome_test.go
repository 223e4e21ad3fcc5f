package actor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestBoltUnknownOutcomeSettles gives up on a write while the committer cannot take
// it (the test holds bbolt's write transaction): Write answers ErrIndeterminate with
// the ctx's error, and the next Read of the sandbox waits until the committer is done
// with the batch, so it shows the batch, and no read before it showed the sandbox
// without it then with it.
func TestBoltUnknownOutcomeSettles(t *testing.T) {
	t.Parallel()
	s := openTestBolt(t)
	tx, err := s.db.Begin(true) // the committer's next transaction waits for this one
	must(t, err)
	var once sync.Once
	rollback := func() { once.Do(func() { must(t, tx.Rollback()) }) }
	t.Cleanup(rollback) // before the store's Close, which waits for the committer
	b := &Batch{Sandbox: "o1"}
	b.Put([]byte("k"), []byte("v"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Write(ctx, b) }()
	cancel() // queued or taken by the committer, the batch cannot be written before tx ends
	err = <-done
	if !errors.Is(err, ErrIndeterminate) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a write given up while queued: %v, want ErrIndeterminate and context.Canceled", err)
	}
	got := make(chan string, 1)
	go func() {
		var v string
		err := s.Read(context.Background(), "o1", func(r Reader) error { v = string(r.Get([]byte("k"))); return nil })
		if err != nil {
			v = err.Error()
		}
		got <- v
	}()
	select {
	case v := <-got:
		t.Fatalf("the read after an unknown outcome answered %q before the committer was done", v)
	case <-time.After(100 * time.Millisecond): // room for a read that does not wait to answer
	}
	rollback()
	if v := <-got; v != "v" {
		t.Fatalf("the read after the outcome settled: %q, want the batch's %q", v, "v")
	}
	s.mu.Lock()
	left := len(s.unknown)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d sandboxes still marked unknown after the read settled them", left)
	}
}
