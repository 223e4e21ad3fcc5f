package actor

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestEachSandboxPaged lists more sandboxes than a page and, while it holds the first
// one, writes enough to make the store grow its file: that write waits for every read
// open at the time, so it completes only if the list holds no read while its caller
// takes an item. The list is every sandbox once, in id order, filtered by label.
func TestEachSandboxPaged(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	const count = listPage + 44
	var ids []string
	for i := range count {
		ids = append(ids, fmt.Sprintf("p%04d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < count; i += 8 {
				labels := map[string]string{"half": fmt.Sprint(i % 2)}
				if _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: ids[i], Labels: labels}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var got []string
	grew := false
	err := n.EachSandbox(ctx, nil, func(in SandboxInfo) error {
		got = append(got, in.ID)
		if grew {
			return nil
		}
		grew = true
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		b := &Batch{Sandbox: "zz-big"}
		b.Put([]byte("blob"), bytes.Repeat([]byte("x"), 40<<20))
		if err := n.store.Write(wctx, b); err != nil {
			return fmt.Errorf("a write while the list held an item: %w (the list holds a read open)", err)
		}
		return nil
	})
	must(t, err)
	if !slices.Equal(got, ids) {
		t.Fatalf("listed %d sandboxes, want the %d created, in id order, once each", len(got), len(ids))
	}

	got = got[:0]
	must(t, n.EachSandbox(ctx, map[string]string{"half": "1"}, func(in SandboxInfo) error {
		got = append(got, in.ID)
		return nil
	}))
	if len(got) != count/2 || got[0] != ids[1] || got[len(got)-1] != ids[count-1] {
		t.Fatalf("listed %d with half=1, want %d from %s to %s", len(got), count/2, ids[1], ids[count-1])
	}

	// An error from fn ends the walk and comes back as it is.
	stop := fmt.Errorf("stop")
	calls := 0
	err = n.EachSandbox(ctx, nil, func(SandboxInfo) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("EachSandbox = %v after %d calls, want fn's error after 1", err, calls)
	}
}

// TestEachSandboxWhileChanging walks the sandboxes again and again while others are
// created and deleted: every walk is in strictly increasing id order (none twice) and
// holds every sandbox that existed throughout.
func TestEachSandboxWhileChanging(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	const stable = listPage + 20
	for i := range stable {
		_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: fmt.Sprintf("s%04d", 2*i)})
		must(t, err)
	}
	stop := make(chan struct{})
	churned := make(chan error, 1)
	go func() {
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("s%04d", 2*(i%stable)+1) // between two stable ones
			if _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: id}); err != nil {
				churned <- err
				return
			}
			if err := n.DeleteSandbox(ctx, id); err != nil {
				churned <- err
				return
			}
		}
	}()
	for range 10 {
		prev, seen := "", 0
		must(t, n.EachSandbox(ctx, nil, func(in SandboxInfo) error {
			if in.ID <= prev {
				return fmt.Errorf("%s listed after %s", in.ID, prev)
			}
			prev = in.ID
			var i int
			if _, err := fmt.Sscanf(in.ID, "s%04d", &i); err == nil && i%2 == 0 {
				seen++
			}
			return nil
		}))
		if seen != stable {
			t.Fatalf("a walk listed %d of the %d sandboxes that existed throughout", seen, stable)
		}
	}
	close(stop)
	if err := <-churned; err != nil {
		t.Fatal(err)
	}
}
