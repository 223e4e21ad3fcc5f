package gateway

import "github.com/prometheus/client_golang/prometheus"

// Results of forwarded requests (sandgate_forward_requests_total's result label).
const (
	forwardOK          = "ok"          // the owner answered, whatever it said
	forwardRetry421    = "retry_421"   // a 421 retried after catching up
	forwardHeld        = "held"        // a request held at least once
	forwardUnavailable = "unavailable" // 503: the hold timed out, or a forward failed
)

// forwardMetrics are the forwarding layer's metrics.
type forwardMetrics struct {
	forwards *prometheus.CounterVec
	heldNow  prometheus.Gauge
	holdTime prometheus.Histogram
	streams  prometheus.Gauge
	// catchUps counts the catch-ups before serving sandboxes this node's replica did
	// not know, by how they went; catchUpWaits the requests that waited for one
	// (forward_unknown.go): their ratio is how many requests share one.
	catchUps     *prometheus.CounterVec
	catchUpWaits prometheus.Counter
}

func newForwardMetrics() *forwardMetrics {
	m := &forwardMetrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandgate_forward_requests_total",
			Help: "Requests for sandboxes of other nodes and held requests, by result: ok (the owner answered), retry_421 (retried once after a stale table), held (held at least once while the sandbox had no live owner), unavailable (503 after the hold timeout or a failed forward).",
		}, []string{"result"}),
		heldNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandgate_forward_held_requests",
			Help: "Requests held now, waiting for their sandbox to have a live owner.",
		}),
		holdTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sandgate_forward_hold_duration_seconds",
			Help:    "How long held requests were held, observed when each hold ends (served, forwarded or 503).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 3, 4, 5, 7.5, 10, 30},
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandgate_forward_streams",
			Help: "SSE and WebSocket streams this node proxies to their sandboxes' owners now.",
		}),
		catchUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandgate_forward_catchups_total",
			Help: "Catch-ups with the leader before serving a sandbox this node's replica did not know, by how: read_index (the leader's commit index, no write), write (an empty write through the log, when the leader could not vouch for an index), failed (an error, or neither within the hold timeout).",
		}, []string{"via"}),
		catchUpWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandgate_forward_catchup_waits_total",
			Help: "Requests that waited for a catch-up before serving a sandbox this node's replica did not know; concurrent ones share catch-ups.",
		}),
	}
	for _, v := range []string{catchUpReadIndex, catchUpWrite, catchUpFailed} {
		m.catchUps.WithLabelValues(v)
	}
	for _, r := range []string{forwardOK, forwardRetry421, forwardHeld, forwardUnavailable} {
		m.forwards.WithLabelValues(r)
	}
	return m
}

// collectors returns the metrics to register.
func (m *forwardMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.forwards, m.heldNow, m.holdTime, m.streams, m.catchUps, m.catchUpWaits}
}
