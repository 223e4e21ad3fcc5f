package actor

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestBoltReadWrite(t *testing.T) {
	t.Parallel()
	s := openTestBolt(t)
	ctx := context.Background()
	b := &Batch{Sandbox: "a"}
	for i := range 5 {
		b.Put(fmt.Appendf(nil, "e%02d", i), fmt.Appendf(nil, "v%d", i))
	}
	b.Put([]byte("m"), []byte("meta"))
	b.Put([]byte("f"), []byte{0xff})
	must(t, s.Write(ctx, b))
	must(t, s.Write(ctx, &Batch{Sandbox: "ab", Ops: []Op{{Key: []byte("e00"), Value: []byte("other")}}}))
	must(t, s.Write(ctx, &Batch{Sandbox: "a", Ops: []Op{{Key: []byte("e00"), Delete: true}}}))

	tests := []struct {
		name     string
		prefix   string
		from     string
		want     []string
		lastWant string
	}{
		{name: "all e", prefix: "e", want: []string{"e01", "e02", "e03", "e04"}, lastWant: "e04"},
		{name: "from", prefix: "e", from: "e03", want: []string{"e03", "e04"}, lastWant: "e04"},
		{name: "from before prefix", prefix: "e", from: "a", want: []string{"e01", "e02", "e03", "e04"}, lastWant: "e04"},
		{name: "none", prefix: "x", want: nil, lastWant: ""},
		{name: "exact", prefix: "m", want: []string{"m"}, lastWant: "m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { // not parallel: the test deletes "a" below
			err := s.Read(ctx, "a", func(r Reader) error {
				var got []string
				var from []byte
				if tc.from != "" {
					from = []byte(tc.from)
				}
				r.Scan([]byte(tc.prefix), from, func(k, _ []byte) bool { got = append(got, string(k)); return true })
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("scan = %v, want %v", got, tc.want)
				}
				if k, _ := r.Last([]byte(tc.prefix)); string(k) != tc.lastWant {
					t.Errorf("last = %q, want %q", k, tc.lastWant)
				}
				return nil
			})
			must(t, err)
		})
	}
	must(t, s.Read(ctx, "a", func(r Reader) error {
		if got := string(r.Get([]byte("m"))); got != "meta" {
			t.Errorf("get m = %q", got)
		}
		if r.Get([]byte("e00")) != nil {
			t.Error("deleted key still there")
		}
		return nil
	}))
	var ids []string
	must(t, s.Sandboxes(ctx, []byte("m"), func(id string, v []byte) error {
		ids = append(ids, id+"="+string(v))
		return nil
	}))
	if fmt.Sprint(ids) != "[a=meta ab=]" {
		t.Errorf("sandboxes = %v", ids)
	}
	must(t, s.Write(ctx, &Batch{Sandbox: "a", DeleteSandbox: true}))
	must(t, s.Read(ctx, "a", func(r Reader) error {
		r.Scan(nil, nil, func(k, _ []byte) bool { t.Errorf("left after delete: %q", k); return true })
		return nil
	}))
	must(t, s.Read(ctx, "ab", func(r Reader) error {
		if string(r.Get([]byte("e00"))) != "other" {
			t.Error("delete of a touched ab")
		}
		return nil
	}))
}

func TestBoltFencing(t *testing.T) {
	t.Parallel()
	s := openTestBolt(t)
	ctx := context.Background()
	put := func(epoch uint64, v string) error {
		return s.Write(ctx, &Batch{Sandbox: "x", Epoch: epoch, Ops: []Op{{Key: []byte("k"), Value: []byte(v)}}})
	}
	must(t, put(5, "a"))
	must(t, put(5, "b"))
	must(t, put(7, "c"))
	wantErr(t, put(6, "stale"), ErrFenced)
	// A stale delete of the whole sandbox is rejected too, and the epoch survives delete.
	wantErr(t, s.Write(ctx, &Batch{Sandbox: "x", Epoch: 1, DeleteSandbox: true}), ErrFenced)
	must(t, s.Write(ctx, &Batch{Sandbox: "x", Epoch: 7, DeleteSandbox: true}))
	wantErr(t, put(3, "after delete"), ErrFenced)
	must(t, put(8, "d"))
	must(t, s.Read(ctx, "x", func(r Reader) error {
		if got := string(r.Get([]byte("k"))); got != "d" {
			t.Errorf("k = %q, want d", got)
		}
		return nil
	}))
}

// TestBoltGroupCommit writes from many goroutines at once, with fenced batches mixed in,
// and checks that every accepted batch landed whole and no fenced one landed at all.
func TestBoltGroupCommit(t *testing.T) {
	t.Parallel()
	s := openTestBolt(t)
	ctx := context.Background()
	for i := range 100 {
		must(t, s.Write(ctx, &Batch{Sandbox: fmt.Sprintf("sb%03d", i), Epoch: 10, Ops: []Op{{Key: []byte("init"), Value: []byte("1")}}}))
	}
	const n = 1000
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			b := &Batch{Sandbox: fmt.Sprintf("sb%03d", i%100), Epoch: 10}
			if i%10 == 3 {
				b.Epoch = 9 // stale: must be rejected and change nothing
			}
			b.Put(fmt.Appendf(nil, "k%04d", i), []byte("a"))
			b.Put(fmt.Appendf(nil, "j%04d", i), []byte("b"))
			errs[i] = s.Write(ctx, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%10 == 3 {
			wantErr(t, err, ErrFenced)
		} else if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i := range n {
		must(t, s.Read(ctx, fmt.Sprintf("sb%03d", i%100), func(r Reader) error {
			k, j := r.Get(fmt.Appendf(nil, "k%04d", i)), r.Get(fmt.Appendf(nil, "j%04d", i))
			if stale := i%10 == 3; stale != (k == nil) || stale != (j == nil) {
				t.Errorf("write %d: k=%q j=%q (stale=%v)", i, k, j, stale)
			}
			return nil
		}))
	}
}

func TestBoltClosed(t *testing.T) {
	t.Parallel()
	s, err := OpenBolt(filepath.Join(t.TempDir(), "x.db"))
	must(t, err)
	must(t, s.Close())
	must(t, s.Close())
	wantErr(t, s.Write(context.Background(), &Batch{Sandbox: "a", Ops: []Op{{Key: []byte("k")}}}), ErrClosed)
}

// BenchmarkGroupCommit compares 1,000 concurrent durable writes from 1,000 sandboxes
// through BoltStore against 1,000 sequential single-write bbolt transactions on the
// same kind of file, in the same run. It reports the ratio as "x_faster".
func BenchmarkGroupCommit(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	var seqTotal, grpTotal float64
	for range b.N {
		dir := b.TempDir()
		db, err := bolt.Open(filepath.Join(dir, "seq.db"), 0o600, nil)
		must(b, err)
		must(b, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucketData); return err }))
		start := nowMono()
		for i := range n {
			must(b, db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketData).Put(fmt.Appendf(nil, "sb%04d\x00k", i), []byte("v"))
			}))
		}
		seqTotal += sinceMono(start)
		_ = db.Close()

		s, err := OpenBolt(filepath.Join(dir, "grp.db"))
		must(b, err)
		var wg sync.WaitGroup
		start = nowMono()
		for i := range n {
			wg.Go(func() {
				if err := s.Write(ctx, &Batch{Sandbox: fmt.Sprintf("sb%04d", i), Ops: []Op{{Key: []byte("k"), Value: []byte("v")}}}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		grpTotal += sinceMono(start)
		_ = s.Close()
	}
	b.ReportMetric(seqTotal/float64(b.N)*1e3, "sequential_ms")
	b.ReportMetric(grpTotal/float64(b.N)*1e3, "group_ms")
	b.ReportMetric(seqTotal/grpTotal, "x_faster")
}
