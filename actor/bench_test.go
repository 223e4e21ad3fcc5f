package actor

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkTurn measures a no-op request/response turn on an active actor against a
// bare Go channel round trip to another goroutine, measured in the same run. It reports
// both and their ratio ("x_channel").
func BenchmarkTurn(b *testing.B) {
	n := newTestNode(b, nil)
	mustCreate(b, n, "bench")
	ctx := context.Background()
	noop := func(a *sbActor) (int, error) { return 1, nil }

	req, resp := make(chan int), make(chan int)
	go func() {
		for v := range req {
			resp <- v
		}
	}()
	defer close(req)
	const rounds = 20000
	var chanNs, turnNs float64
	for range b.N {
		start := time.Now()
		for i := range rounds {
			req <- i
			<-resp
		}
		chanNs += float64(time.Since(start).Nanoseconds()) / rounds
		start = time.Now()
		for range rounds {
			if _, err := call(ctx, n.Node, "bench", noop); err != nil {
				b.Fatal(err)
			}
		}
		turnNs += float64(time.Since(start).Nanoseconds()) / rounds
	}
	b.ReportMetric(chanNs/float64(b.N), "chan_ns")
	b.ReportMetric(turnNs/float64(b.N), "turn_ns")
	b.ReportMetric(turnNs/chanNs, "x_channel")
}

// TestManyPassivated registers 100,000 sandboxes, lets them all passivate, and then
// measures the process RSS and the latency of the first request to passivated ones
// (activation + GetSandbox). It is slow, so it runs only with SANDGATE_BIG=1
// (SANDGATE_BIG_N overrides the count).
func TestManyPassivated(t *testing.T) {
	if os.Getenv("SANDGATE_BIG") == "" {
		t.Skip("set SANDGATE_BIG=1 to run")
	}
	total := 100000
	if s := os.Getenv("SANDGATE_BIG_N"); s != "" {
		total, _ = strconv.Atoi(s)
	}
	rssBefore := rssBytes()
	n := newTestNode(t, func(c *Config) {
		c.MailboxSize = 16
		// Alarms far away, so advancing the fake clock to passivate does not hibernate.
		c.Limits = Budget{IdleTTL: 1000 * time.Hour, MaxDuration: 10000 * time.Hour}
	})
	ctx := context.Background()
	const chunk, workers = 5000, 256
	start := time.Now()
	for base := 0; base < total; base += chunk {
		ids := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range ids {
					spec := SandboxSpec{ID: fmt.Sprintf("sb%06d", i), Labels: map[string]string{"tenant": "t" + strconv.Itoa(i%100)}}
					if _, _, err := n.CreateSandbox(ctx, spec); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for i := base; i < min(base+chunk, total); i++ {
			ids <- i
		}
		close(ids)
		wg.Wait()
		passivateAll(t, n)
	}
	created := time.Since(start)
	goruntime.GC()
	debug.FreeOSMemory()
	rss := rssBytes()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	st, _ := os.Stat(n.cfg.DataDir + "/actors.db")
	t.Logf("%d sandboxes created in %v (%.0f/s); RSS %d MiB (before node %d MiB, peak while creating %d MiB); Go heap in use %d MiB; db file %d MiB; alarms %d",
		total, created.Round(time.Millisecond), float64(total)/created.Seconds(), rss>>20, rssBefore>>20, procStatus("VmHWM:")>>20,
		ms.HeapInuse>>20, st.Size()>>20, n.alarms.len())
	if rss > 1<<30 {
		t.Errorf("RSS %d MiB > 1 GiB", rss>>20)
	}

	lat := make([]time.Duration, 0, 2000)
	for i := range 2000 {
		id := fmt.Sprintf("sb%06d", (i*7919)%total)
		s := time.Now()
		if _, err := n.GetSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(s))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("first request to a passivated sandbox: p50 %v p99 %v max %v", p50, p99, lat[len(lat)-1])
	if p50 > 2*time.Millisecond {
		t.Errorf("activation p50 %v > 2ms", p50)
	}
	ls := time.Now()
	list, err := n.ListSandboxes(ctx, map[string]string{"tenant": "t7"})
	if err != nil || len(list) != total/100 {
		t.Fatalf("list: %d, %v", len(list), err)
	}
	t.Logf("ListSandboxes over %d sandboxes: %v", total, time.Since(ls).Round(time.Millisecond))

	// A restart indexes every sandbox's owner from storage before it serves.
	closeNode(t, n)
	goruntime.GC()
	heapBefore := heapInUse()
	t0 := time.Now()
	n2 := reopen(t, n.cfg, n.clock)
	opened := time.Since(t0)
	goruntime.GC()
	t.Logf("Open with %d sandboxes (alarms and owner index): %v; heap +%d MiB", total, opened.Round(time.Millisecond), (heapInUse()-heapBefore)>>20)
	if got := n2.TenantSandboxes(DefaultTenant); got != total {
		t.Fatalf("owner index after restart: %d of %d", got, total)
	}
	t0 = time.Now()
	idx := newOwners(0)
	must(t, n2.store.Sandboxes(ctx, keyMeta, func(id string, v []byte) error { idx.load(id, recordTenant(v)); return nil }))
	t.Logf("of which the owner index (a scan of every sandbox record): about %v", time.Since(t0).Round(time.Millisecond))

	// A tenant with a few sandboxes among them lists only its own.
	for i := range 10 {
		_, _, err := n2.CreateSandbox(ctx, SandboxSpec{ID: fmt.Sprintf("small%d", i), Tenant: "small"})
		must(t, err)
	}
	passivateAll(t, n2)
	t0 = time.Now()
	small, err := n2.ListTenantSandboxes(ctx, "small", nil)
	if err != nil || len(small) != 10 {
		t.Fatalf("tenant list: %d, %v", len(small), err)
	}
	t.Logf("ListTenantSandboxes of 10 passivated sandboxes among %d: %v", total+10, time.Since(t0).Round(time.Microsecond))
}

func heapInUse() int64 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func rssBytes() int64 { return procStatus("VmRSS:") }

func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkLongPoll measures how long a waiting TakeMessages takes to return after a
// PostMessage starts, and after PostMessage returns (both include the fsyncs of the
// post and of the take's hide). Each message is acknowledged afterwards, untimed, so
// the queue stays short. It reports medians.
func BenchmarkLongPoll(b *testing.B) {
	n := newTestNode(b, nil)
	mustCreate(b, n, "lp")
	ctx := context.Background()
	var fromStart, fromReturn, post []time.Duration
	for range b.N {
		for range 50 {
			got := make(chan time.Time, 1)
			var ids []string
			go func() {
				m, err := n.TakeMessages(ctx, "lp", TakeOptions{Wait: 10 * time.Second, Max: 1})
				if err != nil {
					b.Error(err)
				}
				for _, m := range m {
					ids = append(ids, m.ID)
				}
				got <- time.Now()
			}()
			eventually(b, 5*time.Second, "taker waiting", func() bool {
				w, _ := call(ctx, n.Node, "lp", func(a *sbActor) (bool, error) { return a.msgWake != nil, nil })
				return w
			})
			t0 := time.Now()
			if _, err := n.PostMessage(ctx, "lp", []byte(`1`)); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			at := <-got
			fromStart, fromReturn = append(fromStart, at.Sub(t0)), append(fromReturn, at.Sub(t1))
			post = append(post, t1.Sub(t0))
			if _, err := n.AckMessages(ctx, "lp", ids); err != nil {
				b.Fatal(err)
			}
		}
	}
	slices.Sort(fromStart)
	slices.Sort(fromReturn)
	slices.Sort(post)
	b.ReportMetric(float64(post[len(post)/2].Microseconds()), "post_us")
	b.ReportMetric(float64(post[len(post)*99/100].Microseconds()), "p99_post_us")
	b.ReportMetric(float64(fromReturn[len(fromReturn)*99/100].Microseconds()), "p99_post_return_to_take_us")
	b.ReportMetric(float64(fromStart[len(fromStart)/2].Microseconds()), "post_start_to_take_us")
	b.ReportMetric(float64(fromReturn[len(fromReturn)/2].Microseconds()), "post_return_to_take_us")
	b.ReportMetric(float64(fromStart[len(fromStart)*99/100].Microseconds()), "p99_post_start_to_take_us")
}

// BenchmarkActivateQueued measures activating a passivated sandbox with 10,000 queued
// 1 KiB messages (the queue stays in storage: activation reads the records' lengths
// only, to count them and sum their bytes).
func BenchmarkActivateQueued(b *testing.B) {
	n := newTestNode(b, func(c *Config) { c.MessageQueueLimit = 10000 })
	mustCreate(b, n, "aq")
	ctx := context.Background()
	data := []byte(`"` + strings.Repeat("m", 1022) + `"`)
	var wg sync.WaitGroup
	for range 8 { // concurrent posts share group commits
		wg.Go(func() {
			for range 10000 / 8 {
				if _, err := n.PostMessage(ctx, "aq", data); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		passivateAll(b, n)
		b.StartTimer()
		if _, err := n.GetSandbox(ctx, "aq"); err != nil {
			b.Fatal(err)
		}
	}
}
