package plugins_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/plugins"
)

func TestCollector(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "bad"), nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	_, _ = h.Route(ctx, &plugins.RouteRequest{SandboxID: "good"})
	_, _ = h.Route(ctx, &plugins.RouteRequest{SandboxID: "trap"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			if c := m.GetCounter(); c != nil {
				got[key] = c.GetValue()
			} else {
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	tests := []struct {
		name string
		want float64
	}{
		{name: "sandgate_plugin_calls_total,hook=route", want: 2},
		{name: "sandgate_plugin_failures_total,hook=route,kind=trap", want: 1},
		{name: "sandgate_plugin_instances_total,event=discarded", want: 1},
		// The first load counts: a loaded plugin never shows 0 loads.
		{name: "sandgate_plugin_loads_total,result=ok", want: 1},
		{name: "sandgate_plugin_loads_total,result=failed", want: 0},
		{name: "sandgate_plugin_runtimes_total,event=opened", want: 1},
	}
	for _, tt := range tests {
		if v, ok := got[tt.name]; !ok || v != tt.want {
			t.Errorf("%s = %v (present %v), want %v", tt.name, v, ok, tt.want)
		}
	}
	// What promtool check metrics would say of the host's families.
	problems, err := testutil.CollectAndLint(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
