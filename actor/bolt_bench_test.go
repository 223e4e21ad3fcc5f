package actor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkBoltRead measures one Storage.Read of a sandbox among 1,000: a Get, a
// short Scan and a Last, as an activation's load does. It is the read hot path that
// the panic containment in bolt_damage.go wraps.
func BenchmarkBoltRead(b *testing.B) {
	s := openTestBolt(b)
	ctx := context.Background()
	for i := range 1000 {
		bt := &Batch{Sandbox: fmt.Sprintf("sb%04d", i)}
		bt.Put([]byte("m"), []byte(`{"id":"x"}`))
		for j := range 8 {
			bt.Put(fmt.Appendf(nil, "e%02d", j), []byte("event"))
		}
		must(b, s.Write(ctx, bt))
	}
	b.ResetTimer()
	for i := range b.N {
		err := s.Read(ctx, fmt.Sprintf("sb%04d", i%1000), func(r Reader) error {
			if r.Get([]byte("m")) == nil {
				return fmt.Errorf("no meta")
			}
			n := 0
			r.Scan([]byte("e"), nil, func(k, v []byte) bool { n++; return true })
			if k, _ := r.Last([]byte("e")); n != 8 || k == nil {
				return fmt.Errorf("scan %d", n)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenCheck measures the walk OpenBolt makes of every sandbox's records
// (checkAll) on a file of 10,000 sandboxes of about 1.3 KB each, against the scan of
// every sandbox's alarm that Node.Open makes anyway, in the same run. It reports both
// and their ratio ("x_alarm_scan").
func BenchmarkOpenCheck(b *testing.B) {
	const sandboxes = 10000
	s := openTestBolt(b)
	ctx := context.Background()
	meta := make([]byte, 900)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for i := range sandboxes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			bt := &Batch{Sandbox: fmt.Sprintf("sb%05d", i)}
			bt.Put(keyMeta, meta)
			bt.Put(keyAlarm, []byte("12345678"))
			bt.Put(keyCounters, make([]byte, 16))
			for j := range 2 {
				bt.Put(seqKey(pfxEvent, uint64(j+1)), make([]byte, 150))
			}
			if err := s.Write(ctx, bt); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	var checkNs, scanNs float64
	for range b.N {
		start := time.Now()
		if walked := s.checkAll(); walked != sandboxes {
			b.Fatalf("walked %d sandboxes", walked)
		}
		checkNs += float64(time.Since(start))
		start = time.Now()
		must(b, s.Sandboxes(ctx, keyAlarm, func(string, []byte) error { return nil }))
		scanNs += float64(time.Since(start))
	}
	b.ReportMetric(checkNs/float64(b.N)/1e6, "check_ms")
	b.ReportMetric(scanNs/float64(b.N)/1e6, "alarm_scan_ms")
	b.ReportMetric(checkNs/scanNs, "x_alarm_scan")
}
