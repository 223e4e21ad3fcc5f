package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// placedFSM returns an FSM with n members and every partition placed.
func placedFSM(tb testing.TB, n int) *fsm {
	tb.Helper()
	f := testFSM(tb)
	var cmds [][]byte
	s := emptyState()
	for _, id := range ids(n) {
		cmds = append(cmds, encodeRegister(Member{ID: id, RaftAddr: string(id)}))
		s, _ = s.register(Member{ID: id, RaftAddr: string(id), Status: StatusAlive})
	}
	moves, _, _ := plan(s, 0, nil)
	cmds = append(cmds, encodeAssign(moves))
	for i, r := range applyAll(f, cmds) {
		if r != nil {
			tb.Fatalf("command %d: %v", i, r)
		}
	}
	return f
}

func sandboxIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("sb-%08x-%04d", i*2654435761, i)
	}
	return out
}

// BenchmarkOwner is the request-path lookup; BenchmarkOwnerBaselineMap is a bare map
// lookup of the same ids in the same run, the ratio to report.
func BenchmarkOwner(b *testing.B) {
	n := &Node{fsm: placedFSM(b, 5)}
	keys := sandboxIDs(1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, ok := n.Owner(keys[i&1023]); !ok {
			b.Fatal("unowned")
		}
		i++
	}
}

func BenchmarkOwnerBaselineMap(b *testing.B) {
	keys := sandboxIDs(1024)
	m := make(map[string]NodeID, len(keys))
	for _, k := range keys {
		m[k] = "node-00"
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := m[keys[i&1023]]; !ok {
			b.Fatal("missing")
		}
		i++
	}
}

// TestOwnerHammer reads owners while the table changes under it; with -race it
// checks that the lock-free publication is sound, and every read must see one whole
// version (an owner with that owner's epoch).
func TestOwnerHammer(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	n := &Node{fsm: f}
	keys := sandboxIDs(256)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, e, ok := n.Owner(keys[i%len(keys)]); !ok || e == 0 {
					t.Errorf("Owner saw an unplaced table (epoch %d, ok %v)", e, ok)
					return
				}
			}
		}()
	}
	idx := uint64(100)
	for round := 0; round < 200; round++ {
		s := f.cur.Load()
		var moves []move
		for p := round % 7; p < Partitions; p += 7 {
			owner := ids(3)[(round+p)%3]
			moves = append(moves, move{P: p, Owner: owner, Expect: s.parts[p].Epoch})
		}
		if r := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: encodeAssign(moves)}); r != nil {
			t.Fatal(r)
		}
		idx++
	}
	close(stop)
	wg.Wait()
}

// BenchmarkApply measures the commit latency of one command on a 3-node cluster on
// loopback with bbolt stores, beside a 1-node cluster in the same run. It reports the
// p50 and p99 of single-writer applies.
func BenchmarkApply(b *testing.B) {
	for _, size := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
			nodes := cluster(b, size)
			l := leader(b, nodes...)
			ctx := context.Background()
			cmd := encodeRegister(l.Self())
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := l.apply(ctx, cmd); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
