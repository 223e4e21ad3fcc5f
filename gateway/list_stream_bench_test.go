package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

// BenchmarkListSandboxes measures what GET /v1/sandboxes holds in memory while it
// answers 3,000 sandboxes, against building the whole answer first (the list, then its
// JSON: what the handler did before list_stream.go), and when the client gets the
// first byte against when it gets the last. Reported as ratios of the same run.
func BenchmarkListSandboxes(b *testing.B) {
	ts := newTestServer(b, &serverOptions{maxPerTenant: -1})
	const count = 3000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < count; i += 8 {
				spec := actor.SandboxSpec{ID: fmt.Sprintf("b%05d", i), Labels: map[string]string{"team": "bench"}}
				if _, _, err := ts.srv.node.CreateSandbox(context.Background(), spec); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	ctx := withPrincipal(context.Background(), Principal{Tenant: "default", Admin: true})
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/sandboxes", nil)
	heap := func() uint64 {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var wholeHeld, streamHeld, wholeFirst, streamFirst, wholeAll, streamAll float64
	for range b.N {
		// Whole: the list and its JSON are held before the first byte goes out.
		base := heap()
		start := time.Now()
		list, err := ts.srv.node.ListSandboxes(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]sandboxJSON, 0, len(list))
		for _, i := range list {
			out = append(out, ts.srv.renderOwned(i))
		}
		body, err := json.Marshal(map[string]any{"sandboxes": out})
		if err != nil {
			b.Fatal(err)
		}
		wholeFirst += float64(time.Since(start))
		h := heap()
		wholeHeld += float64(h - min(base, h))
		goruntime.KeepAlive(list)
		goruntime.KeepAlive(out)
		_, _ = (&countWriter{}).Write(body)
		wholeAll += float64(time.Since(start))
		list, out, body = nil, nil, nil

		// Streamed: what the handler holds at its second write, mid-list.
		base = heap()
		cw := &countWriter{header: http.Header{}}
		cw.onWrite = func(n int) {
			switch n {
			case 1:
				streamFirst += float64(time.Since(start))
			case 2:
				h := heap()
				streamHeld += float64(h - min(base, h))
			}
		}
		start = time.Now()
		if err := ts.srv.listSandboxes(cw, req); err != nil {
			b.Fatal(err)
		}
		streamAll += float64(time.Since(start))
		if cw.writes < 3 {
			b.Fatalf("the list went out in %d writes: too short to measure", cw.writes)
		}
	}
	b.ReportMetric(streamHeld/wholeHeld, "held_stream_x_whole")
	b.ReportMetric(wholeHeld/float64(b.N)/(1<<20), "held_whole_MiB")
	b.ReportMetric(streamFirst/wholeFirst, "first_byte_stream_x_whole")
	b.ReportMetric(streamAll/wholeAll, "last_byte_stream_x_whole")
}

// countWriter is an http.ResponseWriter that counts and drops what it is sent.
type countWriter struct {
	header  http.Header
	writes  int
	bytes   int
	onWrite func(n int)
}

func (w *countWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}
func (w *countWriter) WriteHeader(int) {}
func (w *countWriter) Write(p []byte) (int, error) {
	w.writes++
	w.bytes += len(p)
	if w.onWrite != nil {
		w.onWrite(w.writes)
	}
	return len(p), nil
}
