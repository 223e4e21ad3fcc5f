package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// openClusterStore starts a real one-node cluster (raft on loopback, bbolt in a
// temporary directory) and returns the adapter over it with a real local bolt store,
// both closed at cleanup.
func openClusterStore(t *testing.T) (*cluster.Node, actor.Storage, actor.Storage) {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.NodeID = "g1"
	cfg.DataDir = t.TempDir()
	cfg.Multiplier = 0.1
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.RaftLogOutput = io.Discard
	cfg.Secret = []byte("a test secret of at least thirty-two bytes")
	n, err := cluster.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	local, err := actor.OpenBolt(filepath.Join(t.TempDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := newClusterStore(n, local)
	t.Cleanup(func() { _ = s.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, ok := n.Owner("zz-last"); ok && n.IsLeader() {
			placedAll := true
			for p := range cluster.Partitions {
				placedAll = placedAll && n.Partition(p).State == cluster.PartitionActive
			}
			if placedAll {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the node never placed its partitions")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n, s, local
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestClusterStoreReadWrite(t *testing.T) {
	t.Parallel()
	n, s, local := openClusterStore(t)
	ctx := context.Background()
	b := &actor.Batch{Sandbox: "a", Epoch: n.Epoch("a")}
	for i := range 5 {
		b.Put(fmt.Appendf(nil, "e%02d", i), fmt.Appendf(nil, "v%d", i))
	}
	b.Put([]byte("m"), []byte("meta"))
	mustOK(t, s.Write(ctx, b))
	mustOK(t, s.Write(ctx, &actor.Batch{Sandbox: "ab", Epoch: n.Epoch("ab"), Ops: []actor.Op{{Key: []byte("e00"), Value: []byte("other")}}}))
	mustOK(t, s.Write(ctx, &actor.Batch{Sandbox: "a", Epoch: n.Epoch("a"), Ops: []actor.Op{{Key: []byte("e00"), Delete: true}}}))
	node := &actor.Batch{Sandbox: nodeRecordsID, Epoch: 0}
	node.Put([]byte("seqbase"), []byte("local only"))
	mustOK(t, s.Write(ctx, node))

	tests := []struct {
		name, prefix, from, want, last string
	}{
		{name: "all e", prefix: "e", want: "[e01 e02 e03 e04]", last: "e04"},
		{name: "from", prefix: "e", from: "e03", want: "[e03 e04]", last: "e04"},
		{name: "from before prefix", prefix: "e", from: "a", want: "[e01 e02 e03 e04]", last: "e04"},
		{name: "none", prefix: "x", want: "[]", last: ""},
		{name: "exact", prefix: "m", want: "[m]", last: "m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { // not parallel: the test deletes "a" below
			mustOK(t, s.Read(ctx, "a", func(r actor.Reader) error {
				var got []string
				var from []byte
				if tc.from != "" {
					from = []byte(tc.from)
				}
				r.Scan([]byte(tc.prefix), from, func(k, _ []byte) bool { got = append(got, string(k)); return true })
				if fmt.Sprint(got) != tc.want {
					t.Errorf("scan = %v, want %v", got, tc.want)
				}
				if k, _ := r.Last([]byte(tc.prefix)); string(k) != tc.last {
					t.Errorf("last = %q, want %q", k, tc.last)
				}
				return nil
			}))
		})
	}
	var ids []string
	mustOK(t, s.Sandboxes(ctx, []byte("m"), func(id string, v []byte) error {
		ids = append(ids, id+"="+string(v))
		return nil
	}))
	if fmt.Sprint(ids) != "[_node= a=meta ab=]" {
		t.Errorf("sandboxes = %v", ids)
	}
	// A page from an id on: the node records merged in where they sort.
	for _, tc := range []struct{ after, want string }{
		{after: "", want: "[_node= a=meta ab=]"},
		{after: "_", want: "[_node= a=meta ab=]"},
		{after: "_node", want: "[a=meta ab=]"},
		{after: "a", want: "[ab=]"},
		{after: "aa", want: "[ab=]"},
		{after: "ab", want: "[]"},
	} {
		ids := []string{}
		mustOK(t, s.(actor.SandboxPager).SandboxesAfter(ctx, []byte("m"), tc.after, func(id string, v []byte) error {
			ids = append(ids, id+"="+string(v))
			return nil
		}))
		if fmt.Sprint(ids) != tc.want {
			t.Errorf("sandboxes after %q = %v, want %s", tc.after, ids, tc.want)
		}
	}
	// The node records are in the local store and not replicated.
	mustOK(t, local.Read(ctx, nodeRecordsID, func(r actor.Reader) error {
		if string(r.Get([]byte("seqbase"))) != "local only" {
			t.Error("node records are not in the local store")
		}
		return nil
	}))
	mustOK(t, n.Read(ctx, nodeRecordsID, func(r cluster.Reader) error {
		r.Scan(nil, nil, func(k, _ []byte) bool { t.Errorf("node record %q replicated", k); return true })
		return nil
	}))
	mustOK(t, s.Write(ctx, &actor.Batch{Sandbox: "a", Epoch: n.Epoch("a"), DeleteSandbox: true}))
	mustOK(t, s.Read(ctx, "a", func(r actor.Reader) error {
		r.Scan(nil, nil, func(k, _ []byte) bool { t.Errorf("left after delete: %q", k); return true })
		return nil
	}))
	mustOK(t, s.Read(ctx, "ab", func(r actor.Reader) error {
		if string(r.Get([]byte("e00"))) != "other" {
			t.Error("delete of a touched ab")
		}
		return nil
	}))
}

func TestClusterStoreErrors(t *testing.T) {
	t.Parallel()
	n, s, _ := openClusterStore(t)
	ctx := context.Background()
	cur := n.Epoch("x")
	write := func(epoch uint64, del bool) error {
		b := &actor.Batch{Sandbox: "x", Epoch: epoch, DeleteSandbox: del}
		b.Put([]byte("k"), fmt.Appendf(nil, "at %d", epoch))
		return s.Write(ctx, b)
	}
	tests := []struct {
		name string
		err  error
		want []error
	}{
		{"current epoch", write(cur, false), nil},
		{"older epoch", write(cur-1, false), []error{actor.ErrFenced, cluster.ErrFenced}},
		{"newer epoch", write(cur+1, false), []error{actor.ErrFenced}},
		{"stale delete", write(cur-1, true), []error{actor.ErrFenced}},
		{"bad id", s.Write(ctx, &actor.Batch{Sandbox: "a\x00b", Ops: []actor.Op{{Key: []byte("k")}}}), []error{actor.ErrInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil && tt.err != nil {
				t.Fatal(tt.err)
			}
			for _, w := range tt.want {
				if !errors.Is(tt.err, w) {
					t.Errorf("err = %v, want %v", tt.err, w)
				}
			}
		})
	}
	mustOK(t, s.Read(ctx, "x", func(r actor.Reader) error {
		if got, want := string(r.Get([]byte("k"))), fmt.Sprintf("at %d", cur); got != want {
			t.Errorf("k = %q, want %q (the fenced writes changed it)", got, want)
		}
		return nil
	}))
	mustOK(t, s.Close())
	mustOK(t, s.Close())
	if err := write(cur, false); !errors.Is(err, actor.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if err := s.Read(ctx, "x", func(actor.Reader) error { return nil }); !errors.Is(err, actor.ErrClosed) {
		t.Errorf("read after Close: %v", err)
	}
	mustOK(t, n.Close())
	if err := newClusterStore(n, nil).Write(ctx, &actor.Batch{Sandbox: "x", Epoch: cur, Ops: []actor.Op{{Key: []byte("k")}}}); !errors.Is(err, actor.ErrClosed) {
		t.Errorf("write on a closed node: %v", err)
	}
}

// TestClusterStoreGroupCommit writes from many goroutines at once with stale batches
// mixed in: every accepted batch landed whole and no fenced one landed at all.
func TestClusterStoreGroupCommit(t *testing.T) {
	t.Parallel()
	n, s, _ := openClusterStore(t)
	ctx := context.Background()
	const sandboxes, writes = 50, 500
	var wg sync.WaitGroup
	errs := make([]error, writes)
	for i := range writes {
		wg.Go(func() {
			sb := fmt.Sprintf("sb%03d", i%sandboxes)
			b := &actor.Batch{Sandbox: sb, Epoch: n.Epoch(sb)}
			if i%10 == 3 {
				b.Epoch-- // stale: rejected, changes nothing
			}
			b.Put(fmt.Appendf(nil, "k%04d", i), []byte("a"))
			b.Put(fmt.Appendf(nil, "j%04d", i), []byte("b"))
			errs[i] = s.Write(ctx, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if stale := i%10 == 3; stale != errors.Is(err, actor.ErrFenced) || (!stale && err != nil) {
			t.Fatalf("write %d (stale %v): %v", i, stale, err)
		}
	}
	for i := range writes {
		mustOK(t, s.Read(ctx, fmt.Sprintf("sb%03d", i%sandboxes), func(r actor.Reader) error {
			k, j := r.Get(fmt.Appendf(nil, "k%04d", i)), r.Get(fmt.Appendf(nil, "j%04d", i))
			if stale := i%10 == 3; stale != (k == nil) || stale != (j == nil) {
				t.Errorf("write %d: k=%q j=%q (stale=%v)", i, k, j, stale)
			}
			return nil
		}))
	}
}
