package plugins

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Host is a prometheus.Collector: register it once (reg.MustRegister(host)) and
// /metrics serves the counters of [Host.Stats]. Collect is safe for concurrent use.
var _ prometheus.Collector = (*Host)(nil)

// metricDescs are the descriptions of the metrics a Host collects.
type metricDescs struct {
	calls, denied, failures, breaker, instances, loads, runtimes, logsDrop *prometheus.Desc
}

// descs returns the metrics' descriptions, made at the first Describe or Collect:
// package-level prometheus.NewDesc calls would run (43 allocations) at the
// initialisation of every process of the binary, CLI runs included.
func descs() *metricDescs {
	descsMade.once.Do(func() {
		descsMade.d = metricDescs{
			calls:     prometheus.NewDesc("sandgate_plugin_calls_total", "Policy decisions asked, by hook.", []string{"hook"}, nil),
			denied:    prometheus.NewDesc("sandgate_plugin_denied_total", "Requests denied by the route hook of the plugin.", nil, nil),
			failures:  prometheus.NewDesc("sandgate_plugin_failures_total", "Calls answered by the failure policy, by hook and kind.", []string{"hook", "kind"}, nil),
			breaker:   prometheus.NewDesc("sandgate_plugin_breaker_open", "1 while the hook's circuit breaker is open.", []string{"hook"}, nil),
			instances: prometheus.NewDesc("sandgate_plugin_instances_total", "Instance lifecycle events: created, discarded (after a failure), recycled.", []string{"event"}, nil),
			// Loads are counted from the first: ok is the number of modules put in service so
			// far (what a generation gauge would show), failed the loads that kept the old one.
			loads:    prometheus.NewDesc("sandgate_plugin_loads_total", "Module loads by result (ok, failed), the first load included.", []string{"result"}, nil),
			runtimes: prometheus.NewDesc("sandgate_plugin_runtimes_total", "wazero runtimes opened and closed.", []string{"event"}, nil),
			logsDrop: prometheus.NewDesc("sandgate_plugin_logs_dropped_total", "Plugin log lines dropped by the rate limit.", nil, nil),
		}
	})
	return &descsMade.d
}

var descsMade struct {
	once sync.Once
	d    metricDescs
}

// Describe implements prometheus.Collector.
func (h *Host) Describe(ch chan<- *prometheus.Desc) {
	ds := descs()
	for _, d := range []*prometheus.Desc{ds.calls, ds.denied, ds.failures, ds.breaker, ds.instances, ds.loads, ds.runtimes, ds.logsDrop} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (h *Host) Collect(ch chan<- prometheus.Metric) {
	s, d := h.Stats(), descs()
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, hk := range []struct {
		name string
		s    HookStats
	}{{"route", s.Route}, {"budget", s.Budget}} {
		counter(d.calls, hk.s.Calls, hk.name)
		for _, k := range []struct {
			kind string
			v    uint64
		}{
			{"timeout", hk.s.Timeouts}, {"trap", hk.s.Traps}, {"garbage", hk.s.Garbage}, {"busy", hk.s.Busy},
			{"canceled", hk.s.Canceled}, {"breaker_open", hk.s.BreakerOpen}, {"closed", hk.s.Closed},
		} {
			counter(d.failures, k.v, hk.name, k.kind)
		}
		open := 0.0
		if hk.s.BreakerIsOpen {
			open = 1
		}
		gauge(d.breaker, open, hk.name)
	}
	counter(d.denied, s.Route.Denied)
	counter(d.instances, s.InstancesCreated, "created")
	counter(d.instances, s.InstancesDiscarded, "discarded")
	counter(d.instances, s.InstancesRecycled, "recycled")
	counter(d.loads, s.Loads, "ok")
	counter(d.loads, s.ReloadFailures, "failed")
	counter(d.runtimes, s.RuntimesOpened, "opened")
	counter(d.runtimes, s.RuntimesClosed, "closed")
	counter(d.logsDrop, s.LogsDropped)
}
