package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkStoreWrite measures replicated batch writes: a one-node cluster as the
// baseline, then three nodes, each with 1 and 64 concurrent writers on the leader
// and 64 on a follower (its batches go to the leader over a batch RPC), and a bare
// fsync'd bbolt update as the floor. It reports batches per second and the p50 and
// p99 of Write. Raft runs at its default timeouts (Multiplier 1).
func BenchmarkStoreWrite(b *testing.B) {
	b.Run("bbolt-fsync/writers=1", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "x.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		lat := make([]time.Duration, b.N)
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			t := time.Now()
			err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists(bucketData)
				if err != nil {
					return err
				}
				return bk.Put(fmt.Appendf(nil, "sb%d\x00k", i%64), []byte("value of a record"))
			})
			if err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(t)
		}
		report(b, lat, time.Since(start))
	})
	type run struct {
		name    string
		via     *Node
		writers int
	}
	for _, size := range []int{1, 3} {
		// Both raft log stores run side by side, each sub-benchmark alternating
		// between them, so the two figures come from the same minutes of the machine.
		byStore := map[string][]run{}
		for _, store := range []string{"wal", "bbolt"} {
			nodes := clusterWith(b, size, func(_ int, cfg *Config) {
				cfg.Multiplier = 1
				cfg.LeaseTTL = DefaultLeaseTTL
				cfg.LeaseMargin = DefaultLeaseMargin
				cfg.boltLog = store == "bbolt"
			})
			l := leader(b, nodes...)
			runs := []run{
				{fmt.Sprintf("nodes=%d/writers=1", size), l, 1},
				{fmt.Sprintf("nodes=%d/writers=64", size), l, 64},
			}
			if size > 1 {
				for _, n := range nodes {
					if n != l {
						runs = append(runs, run{"nodes=3/writers=64/follower", n, 64})
						break
					}
				}
			}
			byStore[store] = runs
		}
		for i := range byStore["wal"] {
			for _, store := range []string{"wal", "bbolt"} {
				r := byStore[store][i]
				b.Run("store="+store+"/"+r.name, func(b *testing.B) { benchWrites(b, r.via, r.writers) })
			}
		}
	}
}

// BenchmarkStoreLogs measures one StoreLogs call of 1 and of 64 entries of 300
// bytes (about a batch of two records) on each raft log store: the WAL writes and
// fdatasyncs once, bbolt commits a transaction (two syncs).
func BenchmarkStoreLogs(b *testing.B) {
	for _, n := range []int{1, 64} {
		for _, store := range []string{"wal", "bbolt"} {
			b.Run(fmt.Sprintf("store=%s/entries=%d", store, n), func(b *testing.B) {
				s := openBenchStore(b, store)
				data := make([]byte, 300)
				next := uint64(1)
				logs := make([]*raft.Log, n)
				b.ResetTimer()
				for b.Loop() {
					for i := range logs {
						logs[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
						next++
					}
					if err := s.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "us/entry")
			})
		}
	}
}

func openBenchStore(b *testing.B, store string) raftStore {
	b.Helper()
	var s raftStore
	var err error
	if store == "bbolt" {
		s, err = openLogStore(filepath.Join(b.TempDir(), boltLogName))
	} else {
		s, err = openWAL(b.TempDir(), discard, 0)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchWrites runs b.N writes through n from writers goroutines, each to sandboxes
// n owns.
func benchWrites(b *testing.B, n *Node, writers int) {
	sbs := ownedUpTo(n, writers)
	if len(sbs) < writers {
		b.Skipf("%s owns only %d sample sandboxes", n.ID(), len(sbs))
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	value := make([]byte, 200)
	b.ResetTimer()
	cpu0, idx0, w0 := cpuTime(), n.raft.LastIndex(), n.fsm.db.wb.writes.Load()
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			sb := sbs[w]
			epoch := n.Epoch(sb)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				batch := &Batch{Sandbox: sb, Epoch: epoch, Ops: []Op{
					{Key: fmt.Appendf(nil, "ev/%012d", i), Value: value},
					{Key: []byte("meta"), Value: value[:64]},
				}}
				t := time.Now()
				if err := n.Write(context.Background(), batch); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	total := time.Since(start)
	// Process CPU per batch (every replica's share, since all run here) says what a
	// batch costs with less noise from other jobs than the rate; batches per raft
	// entry says how well group commit groups (the entries include the odd lease
	// and control entry), and batches per state-file transaction (on n) how many
	// entries the file's writer takes at once.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu_us/batch")
	if e := n.raft.LastIndex() - idx0; e > 0 {
		b.ReportMetric(float64(b.N)/float64(e), "batches/entry")
	}
	if w := n.fsm.db.wb.writes.Load() - w0; w > 0 {
		b.ReportMetric(float64(b.N)/float64(w), "batches/file_write")
	}
	report(b, lat, total)
}

// cpuTime returns the CPU time (user and system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, lat []time.Duration, total time.Duration) {
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/total.Seconds(), "batches/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "p99_ms")
}

// fileSink is a raft.SnapshotSink on a file.
type fileSink struct{ *os.File }

func (fileSink) ID() string      { return "bench" }
func (s fileSink) Cancel() error { return s.Close() }

// BenchmarkStoreSnapshot measures a snapshot and a restore of 100,000 sandboxes of
// five records (about 1 KiB each): the time of each, the snapshot's size, and the
// bytes allocated while persisting, which stay far below the size because the file
// is streamed, not held.
func BenchmarkStoreSnapshot(b *testing.B) {
	const sandboxes, perGroup = 100_000, 1000
	src := placedFSM(b, 3)
	value := make([]byte, 200)
	index := uint64(1000)
	for g := 0; g < sandboxes/perGroup; g++ {
		bs := make([]*Batch, perGroup)
		vs := make([]batchVerdict, perGroup)
		for i := range bs {
			sb := fmt.Sprintf("sb-%08d", g*perGroup+i)
			bs[i] = put(sb, "meta", string(value), "settings", string(value), "ev/1", string(value), "ev/2", string(value), "cwd", "/work")
		}
		if _, err := src.db.applyGroup(index, bs, vs); err != nil {
			b.Fatal(err)
		}
		index++
	}
	path := filepath.Join(b.TempDir(), "snap")
	var ms goruntime.MemStats
	b.ResetTimer()
	var persist, restore time.Duration
	var alloc uint64
	var size int64
	for range b.N {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		goruntime.ReadMemStats(&ms)
		a0 := ms.TotalAlloc
		t := time.Now()
		snap, err := src.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if err := snap.Persist(fileSink{f}); err != nil {
			b.Fatal(err)
		}
		snap.Release()
		persist += time.Since(t)
		goruntime.ReadMemStats(&ms)
		alloc += ms.TotalAlloc - a0
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()

		dst := testFSM(b)
		r, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		t = time.Now()
		if err := dst.Restore(r); err != nil {
			b.Fatal(err)
		}
		restore += time.Since(t)
		if dst.db.applied.Load() != index-1 {
			b.Fatalf("restored file at %d, want %d", dst.db.applied.Load(), index-1)
		}
	}
	b.ReportMetric(float64(persist.Milliseconds())/float64(b.N), "snapshot_ms")
	b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "restore_ms")
	b.ReportMetric(float64(size)/(1<<20), "snapshot_MiB")
	b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "persist_alloc_MiB")
}

// BenchmarkStoreRead measures Read of one key and a scan of 20 records of an owned
// sandbox from the state file alone, and with 8 acknowledged batches pending in the
// overlay on top (as on an owner whose replica is behind; injected here).
func BenchmarkStoreRead(b *testing.B) {
	n := solo(b, b.TempDir(), "127.0.0.1:0", nil)
	sb := "bench-sandbox"
	for i := range 20 {
		mustWrite(b, n, sb, fmt.Sprintf("ev/%04d", i), "a value of some forty bytes, give or take")
	}
	for _, pending := range []int{0, 8} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			if pending > 0 {
				base := n.fsm.db.applied.Load() + 1_000_000 // above anything applied
				for i := range pending {
					n.fsm.ov.add(base+uint64(i), []*Batch{put(sb, fmt.Sprintf("ev/%04d", 20+i), "pending", "meta", "m")})
				}
				b.Cleanup(func() { n.fsm.ov.prune(base + uint64(pending)) })
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				err := n.Read(ctx, sb, func(r Reader) error {
					if r.Get([]byte("ev/0003")) == nil {
						b.Fatal("missing record")
					}
					k := 0
					r.Scan([]byte("ev/"), nil, func(_, _ []byte) bool { k++; return true })
					if k != 20+pending {
						b.Fatalf("scanned %d", k)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStateFileWrite measures the state file alone: groups of 20 batches (a
// 200-byte and a 64-byte record each, over 64 sandboxes, as BenchmarkStoreWrite
// writes them) written with 1, 2, 4 or 16 groups per transaction, as a replica
// writes them when it applies entries one at a time or when the writer takes
// several at once. It reports the time and the process CPU time per batch.
func BenchmarkStateFileWrite(b *testing.B) {
	const perGroup = 20
	value := make([]byte, 200)
	for _, perTx := range []int{1, 2, 4, 16} {
		b.Run(fmt.Sprintf("groups/tx=%d", perTx), func(b *testing.B) {
			f := testFSM(b)
			index, i := uint64(1), 0
			es := make([]runEntry, perTx)
			ok := make([]batchVerdict, perGroup)
			b.ResetTimer()
			cpu0 := cpuTime()
			for n := 0; n < b.N; n += perTx * perGroup {
				for g := range es {
					bs := make([]*Batch, perGroup)
					for j := range bs {
						bs[j] = &Batch{Sandbox: fmt.Sprintf("sb-%02d", i%64), Ops: []Op{
							{Key: fmt.Appendf(nil, "ev/%012d", i), Value: value},
							{Key: []byte("meta"), Value: value[:64]},
						}}
						i++
					}
					es[g] = runEntry{index: index, bs: bs, vs: ok}
					index++
				}
				if _, err := f.db.applyRun(es); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(i), "us/batch")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(i), "cpu_us/batch")
		})
	}
}
