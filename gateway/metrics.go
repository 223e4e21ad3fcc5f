package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// metrics holds the gateway's Prometheus collectors, on a registry of its own so that
// two servers in one process (tests, a cluster on one machine) never collide.
//
// Request latency is observed only for request/response routes: an SSE or WebSocket
// stream lasts as long as its client stays, minutes or days, and would drown every
// latency percentile. Streams that started (the SSE response began, the WebSocket was
// upgraded) are observed in histograms of their own when they end; a stream route
// that answers an error instead is counted in sandgate_http_requests_total only.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	sseLife    *prometheus.HistogramVec
	wsLife     *prometheus.HistogramVec
	wsClients  prometheus.Gauge
	sseClients prometheus.Gauge
	streamed   *prometheus.CounterVec
	moves      *prometheus.CounterVec // workspace streams of planned moves
	moveBytes  prometheus.Counter
}

// Stream transports, the values of route.stream.
const (
	streamSSE       = "sse"
	streamWebSocket = "websocket"
)

// streamBuckets are the bounds of stream lifetimes: from a client that gives up at
// once to a terminal left open for a day.
var streamBuckets = []float64{.1, 1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandgate_http_requests_total",
			Help: "HTTP requests by route (method and path pattern) and status code, streams included.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandgate_http_request_duration_seconds",
			Help:    "Latency of request/response routes by route (method and path pattern); SSE and WebSocket streams are not included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		sseLife: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandgate_sse_stream_duration_seconds",
			Help:    "Lifetimes of Server-Sent Events streams by route, observed when each ends.",
			Buckets: streamBuckets,
		}, []string{"route"}),
		wsLife: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandgate_websocket_stream_duration_seconds",
			Help:    "Lifetimes of WebSocket connections to processes and terminals by route, observed when each ends.",
			Buckets: streamBuckets,
		}, []string{"route"}),
		wsClients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandgate_websocket_clients",
			Help: "WebSocket clients attached to processes and terminals.",
		}),
		sseClients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandgate_sse_clients",
			Help: "Open Server-Sent Events streams.",
		}),
		streamed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandgate_streamed_bytes_total",
			Help: "Process output bytes sent to clients, by transport (sse, websocket).",
		}, []string{"transport"}),
	}
	m.moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandgate_workspace_moves_total",
		Help: "Workspace streams of planned moves, by direction (sent, received) and result (ok, failed: the new owner reports the workspace lost).",
	}, []string{"direction", "result"})
	m.moveBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sandgate_workspace_move_bytes_total",
		Help: "Bytes of files in the workspaces this node sent in planned moves that arrived.",
	})
	for _, d := range []string{moveSent, moveReceived} {
		for _, r := range []string{moveOK, moveFailed} {
			m.moves.WithLabelValues(d, r)
		}
	}
	for _, transport := range []string{streamSSE, streamWebSocket} {
		m.streamed.WithLabelValues(transport) // export zeros before the first byte
	}
	m.reg.MustRegister(m.requests, m.latency, m.sseLife, m.wsLife, m.wsClients, m.sseClients, m.streamed, m.moves, m.moveBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// declareStreams exports the stream routes' lifetime histograms before their first
// stream, so a dashboard sees zeros rather than no series.
func (m *metrics) declareStreams(routes []route) {
	for _, rt := range routes {
		if h := m.lifetimes(rt.stream); h != nil {
			h.WithLabelValues(rt.pattern)
		}
	}
}

func (m *metrics) lifetimes(transport string) *prometheus.HistogramVec {
	switch transport {
	case streamSSE:
		return m.sseLife
	case streamWebSocket:
		return m.wsLife
	}
	return nil
}

// sseStarted counts an SSE stream of route (a ServeMux pattern) that began sending
// events, and returns what to call when it ends: it records the stream's lifetime.
func (m *metrics) sseStarted(route string) (ended func()) {
	began := time.Now()
	m.sseClients.Inc()
	return func() {
		m.sseClients.Dec()
		m.sseLife.WithLabelValues(route).Observe(time.Since(began).Seconds())
	}
}

// wsStarted is sseStarted for a WebSocket connection that was upgraded.
func (m *metrics) wsStarted(route string) (ended func()) {
	began := time.Now()
	m.wsClients.Inc()
	return func() {
		m.wsClients.Dec()
		m.wsLife.WithLabelValues(route).Observe(time.Since(began).Seconds())
	}
}

// nodeGauges reports the actor node's active sandboxes, processes, sessions and
// terminals, and what the active sandboxes use, read at scrape time.
func nodeGauges(stats func() actor.Stats) []prometheus.Collector {
	gauge := func(name, help string, f func(actor.Stats) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(f(stats())) })
	}
	return []prometheus.Collector{
		gauge("sandgate_active_sandboxes", "Sandbox actors in memory (not passivated).", func(s actor.Stats) int64 { return int64(s.ActiveSandboxes) }),
		gauge("sandgate_processes", "Processes of active sandboxes, terminals included.", func(s actor.Stats) int64 { return int64(s.Processes) }),
		gauge("sandgate_sessions", "Shell sessions of active sandboxes.", func(s actor.Stats) int64 { return int64(s.Sessions) }),
		gauge("sandgate_terminals", "Terminals of active sandboxes.", func(s actor.Stats) int64 { return int64(s.Terminals) }),
		gauge("sandgate_usage_memory_bytes", "Memory used by the active sandboxes together, as of each one's last turn (measured by an isolating runtime driver).",
			func(s actor.Stats) int64 { return s.MemoryBytes }),
		gauge("sandgate_usage_pids", "Tasks (processes and threads) in the active sandboxes together, as of each one's last turn (measured by an isolating runtime driver).",
			func(s actor.Stats) int64 { return int64(s.Pids) }),
		gauge("sandgate_usage_disk_bytes", "Bytes allocated to the workspaces of the active sandboxes together, as of each one's last turn.",
			func(s actor.Stats) int64 { return s.DiskBytes }),
		gauge("sandgate_disk_images_mounted", "Workspace disk images mounted now (one per active sandbox with a disk quota).",
			func(s actor.Stats) int64 { return int64(s.MountedImages) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sandgate_exited_records_dropped_total",
			Help: "Exited-process records dropped before their keep time because their sandbox kept the newest allowed number of them.",
		}, func() float64 { return float64(stats().ExitedDropped) }),
		gauge("sandgate_storage_unreadable_sandboxes", "Sandboxes whose stored records could not be read (damaged actors.db); they answer 503 until it is repaired and the node restarted.",
			func(s actor.Stats) int64 { return int64(s.UnreadableSandboxes) }),
	}
}

// clusterGauges reports this node's view of the raft cluster, read at scrape time:
// raft term, last applied index, whether it leads, its lease, the members by status
// and the connections its raft port refused for failing the node handshake.
func clusterGauges(n *cluster.Node) []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	cs := []prometheus.Collector{
		gauge("sandgate_raft_term", "Raft term this node is in.", func() float64 { return float64(n.Term()) }),
		gauge("sandgate_raft_applied_index", "Index of the last raft log entry applied to this node's replica.",
			func() float64 { return float64(n.AppliedIndex()) }),
		gauge("sandgate_raft_leader", "1 while this node is the raft leader, else 0.", func() float64 { return b(n.IsLeader()) }),
		gauge("sandgate_cluster_lease_valid", "1 while this node holds a valid node lease (it may serve its sandboxes), else 0.",
			func() float64 { ok, _ := n.Lease(); return b(ok) }),
		gauge("sandgate_cluster_lease_remaining_seconds", "Seconds until this node's lease runs out unless renewed; 0 without one.",
			func() float64 {
				ok, until := n.Lease()
				if !ok {
					return 0
				}
				return max(time.Until(until).Seconds(), 0)
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sandgate_cluster_rejected_node_connections_total",
			Help: "Connections to this node's raft port closed because they failed the node handshake (no or a wrong cluster secret).",
		}, func() float64 { return float64(n.RejectedConns()) }),
	}
	for _, st := range []cluster.Status{cluster.StatusAlive, cluster.StatusDown, cluster.StatusLeft} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "sandgate_cluster_members",
			Help:        "Members of the cluster in this node's replica of the member table, by status.",
			ConstLabels: prometheus.Labels{"status": st.String()},
		}, func() float64 {
			c := 0
			for _, m := range n.Members() {
				if m.Status == st {
					c++
				}
			}
			return float64(c)
		}))
	}
	return cs
}

// register adds more collectors (the actor node's gauges, the policy host's counters).
func (m *metrics) register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// routeMetrics are one route's request series, looked up once when the route is
// wrapped: a label lookup hashes the label values (and formats the status) on every
// request, 3 µs and two allocations of an exec's server CPU (BENCHMARKS.md, "#14,
// fourth pass"). Safe for concurrent use.
type routeMetrics struct {
	m      *metrics
	route  string
	stream bool
	// latency is the route's histogram, made at its first request (not before, so
	// that /metrics shows only routes that served one, as with a lookup each time).
	latency     prometheus.Observer
	latencyOnce sync.Once
	mu          sync.Mutex // serializes adding a status's counter
	codes       atomic.Pointer[[]codeCounter]
}

// codeCounter is a route's request counter for one status code.
type codeCounter struct {
	code int
	c    prometheus.Counter
}

// forRoute returns route's series (a ServeMux pattern, which names the method; "" for
// a request no route matched). Its latency is recorded unless the route streams
// (stream is its transport), whose lifetimes have histograms of their own.
func (m *metrics) forRoute(route, stream string) *routeMetrics {
	if route == "" {
		route = "unmatched"
	}
	rm := &routeMetrics{m: m, route: route, stream: stream != ""}
	rm.codes.Store(&[]codeCounter{})
	return rm
}

// observe records one finished request of the route: its status, and its latency
// unless the route streams.
func (rm *routeMetrics) observe(status int, d time.Duration) {
	rm.counter(status).Inc()
	if !rm.stream {
		rm.latencyOnce.Do(func() { rm.latency = rm.m.latency.WithLabelValues(rm.route) })
		rm.latency.Observe(d.Seconds())
	}
}

// counter returns the route's counter for status. A route answers a handful of
// statuses, so a list copied on each new one beats a map.
func (rm *routeMetrics) counter(status int) prometheus.Counter {
	for _, cc := range *rm.codes.Load() {
		if cc.code == status {
			return cc.c
		}
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	old := *rm.codes.Load()
	for _, cc := range old {
		if cc.code == status {
			return cc.c
		}
	}
	c := rm.m.requests.WithLabelValues(rm.route, strconv.Itoa(status))
	codes := append(old[:len(old):len(old)], codeCounter{status, c})
	rm.codes.Store(&codes)
	return c
}

// statusRecorder remembers the status a handler wrote. It unwraps to the real writer so
// http.ResponseController and websocket.Accept still reach Flush and Hijack. With a
// writeTimeout it also gives the response its write deadline (deadline.go, step 3).
//
// An informational status (1xx but 101, which ends an upgrade's answer) is not the
// answer: a proxied owner's 100 Continue goes to the client through WriteHeader, and a
// forward that fails after it must still be answered with its error, not left to
// net/http's empty 200.
type statusRecorder struct {
	http.ResponseWriter
	status       int
	writeTimeout time.Duration // 0: the route's streams set their own deadlines
	deadline     time.Time
}

func (s *statusRecorder) WriteHeader(code int) {
	if informational(code) {
		s.ResponseWriter.WriteHeader(code)
		return
	}
	if s.status == 0 {
		s.status = code
	}
	s.arm()
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.arm()
	return s.ResponseWriter.Write(b)
}

// arm sets the write deadline writeTimeout from now; it is moved only once a tenth of
// the timeout has passed, so a response written in many pieces arms few timers.
func (s *statusRecorder) arm() {
	if s.writeTimeout <= 0 {
		return
	}
	now := time.Now()
	if d := s.deadline.Sub(now); d > s.writeTimeout-s.writeTimeout/10 {
		return
	}
	s.deadline = now.Add(s.writeTimeout)
	_ = http.NewResponseController(s.ResponseWriter).SetWriteDeadline(s.deadline)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// informational reports whether code is a 1xx status that another one follows.
func informational(code int) bool {
	return code >= 100 && code < 200 && code != http.StatusSwitchingProtocols
}
