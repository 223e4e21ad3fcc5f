package gateway

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches url (a /metrics address) with token (none if empty) and parses it as
// Prometheus does; it also returns the raw text.
func scrape(t testing.TB, client *http.Client, url, token string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body.Bytes())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body.Bytes()))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs, body.Bytes()
}

// labelNames returns the sorted label names of a family's first metric.
func labelNames(mf *dto.MetricFamily) []string {
	var names []string
	if len(mf.GetMetric()) > 0 {
		for _, l := range mf.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// series returns the metric of mf whose route label is route, or nil.
func series(mf *dto.MetricFamily, route string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && l.GetValue() == route {
				return m
			}
		}
	}
	return nil
}

// TestMetricsExposition scrapes /metrics as Prometheus would after a request, an SSE
// stream and a WebSocket connection: every family parses, has the type and labels a
// dashboard expects, streams are in lifetime histograms of their own and not in the
// request latency one, no label repeats what route holds, and promlint (what promtool
// check metrics runs) finds nothing.
func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("mx")
	var p struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/mx/processes", map[string]any{"command": "echo hi"}).json(t, &p)
	ts.readSSE("/v1/sandboxes/mx/processes/"+p.ID+"/output", "", 30*time.Second, lastIs("exit"))
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/mx/terminals/t1", map[string]any{})
	c := ts.dialWS("/v1/sandboxes/mx/terminals/t1/ws")
	c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	c.conn.Close(websocket.StatusNormalClosure, "")

	const (
		outputRoute = "GET " + procPath + "/output"
		eventsRoute = "GET " + sbPath + "/events/stream"
		termWSRoute = "GET " + termPath + "/ws"
		procRoute   = "POST " + sbPath + "/processes"
	)
	var mfs map[string]*dto.MetricFamily
	var text []byte
	// The WebSocket's lifetime is recorded when the server sees the close.
	eventually(t, 30*time.Second, "the WebSocket's lifetime recorded", func() bool {
		mfs, text = scrape(t, ts.client, ts.url+"/metrics", testToken)
		mf := mfs["sandgate_websocket_stream_duration_seconds"]
		m := series(mf, termWSRoute)
		return m != nil && m.GetHistogram().GetSampleCount() == 1
	})

	tests := []struct {
		name   string
		typ    dto.MetricType
		labels []string
	}{
		{"sandgate_http_requests_total", dto.MetricType_COUNTER, []string{"code", "route"}},
		{"sandgate_http_request_duration_seconds", dto.MetricType_HISTOGRAM, []string{"route"}},
		{"sandgate_sse_stream_duration_seconds", dto.MetricType_HISTOGRAM, []string{"route"}},
		{"sandgate_websocket_stream_duration_seconds", dto.MetricType_HISTOGRAM, []string{"route"}},
		{"sandgate_sse_clients", dto.MetricType_GAUGE, nil},
		{"sandgate_websocket_clients", dto.MetricType_GAUGE, nil},
		{"sandgate_streamed_bytes_total", dto.MetricType_COUNTER, []string{"transport"}},
		{"sandgate_active_sandboxes", dto.MetricType_GAUGE, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf := mfs[tt.name]
			if mf == nil {
				t.Fatalf("missing from the scrape")
			}
			if mf.GetType() != tt.typ {
				t.Errorf("type %v, want %v", mf.GetType(), tt.typ)
			}
			if got := labelNames(mf); !slices.Equal(got, tt.labels) {
				t.Errorf("labels %v, want %v", got, tt.labels)
			}
		})
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					t.Errorf("%s has a method label: route names the method", name)
				}
			}
		}
	}

	latency := mfs["sandgate_http_request_duration_seconds"]
	if series(latency, procRoute) == nil {
		t.Errorf("no latency of %s", procRoute)
	}
	for _, rt := range ts.srv.routes {
		if rt.stream != "" && series(latency, rt.pattern) != nil {
			t.Errorf("the request latency histogram has the stream route %s", rt.pattern)
		}
	}
	if m := series(mfs["sandgate_http_requests_total"], outputRoute); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("requests of %s: %v, want 1", outputRoute, m)
	}
	sse := mfs["sandgate_sse_stream_duration_seconds"]
	if m := series(sse, outputRoute); m == nil || m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("SSE lifetimes of %s: %v, want 1", outputRoute, m)
	}
	if m := series(sse, eventsRoute); m == nil || m.GetHistogram().GetSampleCount() != 0 {
		t.Errorf("SSE lifetimes of %s: %v, want a series of 0 before any stream", eventsRoute, m)
	}

	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint on the scrape: %s: %s", p.Metric, p.Text)
	}
	problems, err = testutil.GatherAndLint(ts.srv.metrics.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("GatherAndLint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsListen: ServeMetrics (serve's --metrics-listen) answers /metrics without a
// token and nothing else, while /metrics on the API listener still needs one.
func TestMetricsListen(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ts.srv.ServeMetrics(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = ts.srv.Shutdown(ctx) // stops the metrics listener too; the harness's call is a no-op
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeMetrics returned %v", err)
		}
	})
	ts.sandbox("ml")
	base := "http://" + ln.Addr().String()
	mfs, _ := scrape(t, ts.client, base+"/metrics", "")
	if mf := mfs["sandgate_active_sandboxes"]; mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("sandgate_active_sandboxes on the metrics listener: %v", mf)
	}
	tests := []struct {
		name, url string
		want      int
	}{
		{"API metrics without a token", ts.url + "/metrics", http.StatusUnauthorized},
		{"an API route on the metrics listener", base + "/v1/sandboxes", http.StatusNotFound},
		{"a POST to the metrics listener", base + "/metrics", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "GET"
			if strings.HasPrefix(tt.name, "a POST") {
				method = "POST"
			}
			req, _ := http.NewRequest(method, tt.url, nil)
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s: %d, want %d", method, tt.url, resp.StatusCode, tt.want)
			}
		})
	}
}

// TestRouteMetricsCounted: a route's series, looked up once, still count every request
// by route and status under concurrent requests (a hammer over the copy-on-write list
// of status counters), observe latency only for request/response routes, and export
// no series for a route before its first request.
func TestRouteMetricsCounted(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	exec := m.forRoute("POST /v1/sandboxes/{sb}/exec", "")
	stream := m.forRoute("GET /v1/sandboxes/{sb}/events/stream", streamSSE)
	unmatched := m.forRoute("", "")
	_ = m.forRoute("GET /v1/sandboxes", "")
	if n := testutil.CollectAndCount(m.latency); n != 0 {
		t.Fatalf("%d latency series before any request, want 0", n)
	}
	statuses := []int{200, 404, 400, 200, 500, 200, 409, 503}
	const workers, rounds = 8, 250
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range rounds {
				exec.observe(statuses[(w+i)%len(statuses)], time.Millisecond)
				stream.observe(200, time.Second)
			}
		}()
	}
	for range workers {
		<-done
	}
	unmatched.observe(404, time.Millisecond)
	want := map[int]float64{}
	for w := range workers {
		for i := range rounds {
			want[statuses[(w+i)%len(statuses)]]++
		}
	}
	for code, n := range want {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(exec.route, strconv.Itoa(code))); got != n {
			t.Errorf("exec %d: %v requests, want %v", code, got, n)
		}
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues(stream.route, "200")); got != workers*rounds {
		t.Errorf("stream 200: %v requests, want %d", got, workers*rounds)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("unmatched", "404")); got != 1 {
		t.Errorf("unmatched 404: %v requests, want 1", got)
	}
	// Two request/response routes served (exec, unmatched); the stream and the idle
	// list route have no latency series.
	if n := testutil.CollectAndCount(m.latency); n != 2 {
		t.Errorf("%d latency series, want 2", n)
	}
	h := &dto.Metric{}
	if err := m.latency.WithLabelValues(exec.route).(prometheus.Histogram).Write(h); err != nil {
		t.Fatal(err)
	}
	if got := h.GetHistogram().GetSampleCount(); got != workers*rounds {
		t.Errorf("exec latency: %d samples, want %d", got, workers*rounds)
	}
	if n := testutil.CollectAndCount(m.requests); n != len(want)+2 {
		t.Errorf("%d request series, want %d", n, len(want)+2)
	}
}
