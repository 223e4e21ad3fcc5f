package plugins

import "github.com/prometheus/client_golang/prometheus"

// Host is a prometheus.Collector: register it once (reg.MustRegister(host)) and
// /metrics serves the counters of [Host.Stats]. Collect is safe for concurrent use.
var _ prometheus.Collector = (*Host)(nil)

var (
	descCalls     = prometheus.NewDesc("sandgate_plugin_calls_total", "Policy decisions asked, by hook.", []string{"hook"}, nil)
	descDenied    = prometheus.NewDesc("sandgate_plugin_denied_total", "Requests denied by the route hook of the plugin.", nil, nil)
	descFailures  = prometheus.NewDesc("sandgate_plugin_failures_total", "Calls answered by the failure policy, by hook and kind.", []string{"hook", "kind"}, nil)
	descBreaker   = prometheus.NewDesc("sandgate_plugin_breaker_open", "1 while the hook's circuit breaker is open.", []string{"hook"}, nil)
	descInstances = prometheus.NewDesc("sandgate_plugin_instances_total", "Instance lifecycle events: created, discarded (after a failure), recycled.", []string{"event"}, nil)
	// Loads are counted from the first: ok is the number of modules put in service so
	// far (what a generation gauge would show), failed the loads that kept the old one.
	descLoads    = prometheus.NewDesc("sandgate_plugin_loads_total", "Module loads by result (ok, failed), the first load included.", []string{"result"}, nil)
	descRuntimes = prometheus.NewDesc("sandgate_plugin_runtimes_total", "wazero runtimes opened and closed.", []string{"event"}, nil)
	descLogsDrop = prometheus.NewDesc("sandgate_plugin_logs_dropped_total", "Plugin log lines dropped by the rate limit.", nil, nil)
)

// Describe implements prometheus.Collector.
func (h *Host) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descDenied, descFailures, descBreaker, descInstances, descLoads, descRuntimes, descLogsDrop} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (h *Host) Collect(ch chan<- prometheus.Metric) {
	s := h.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, hk := range []struct {
		name string
		s    HookStats
	}{{"route", s.Route}, {"budget", s.Budget}} {
		counter(descCalls, hk.s.Calls, hk.name)
		for _, k := range []struct {
			kind string
			v    uint64
		}{
			{"timeout", hk.s.Timeouts}, {"trap", hk.s.Traps}, {"garbage", hk.s.Garbage}, {"busy", hk.s.Busy},
			{"canceled", hk.s.Canceled}, {"breaker_open", hk.s.BreakerOpen}, {"closed", hk.s.Closed},
		} {
			counter(descFailures, k.v, hk.name, k.kind)
		}
		open := 0.0
		if hk.s.BreakerIsOpen {
			open = 1
		}
		gauge(descBreaker, open, hk.name)
	}
	counter(descDenied, s.Route.Denied)
	counter(descInstances, s.InstancesCreated, "created")
	counter(descInstances, s.InstancesDiscarded, "discarded")
	counter(descInstances, s.InstancesRecycled, "recycled")
	counter(descLoads, s.Loads, "ok")
	counter(descLoads, s.ReloadFailures, "failed")
	counter(descRuntimes, s.RuntimesOpened, "opened")
	counter(descRuntimes, s.RuntimesClosed, "closed")
	counter(descLogsDrop, s.LogsDropped)
}
