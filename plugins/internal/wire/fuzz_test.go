package wire

import (
	"bytes"
	"maps"
	"slices"
	"testing"
)

// The decoders must never panic, and whatever they accept must re-encode to an input
// they accept again with the same meaning.

func FuzzDecodeDecision(f *testing.F) {
	for _, tt := range decisionCases {
		f.Add(AppendDecision(nil, &tt.d))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decision
		if DecodeDecision(b, &d) != nil {
			return
		}
		var again Decision
		if err := DecodeDecision(AppendDecision(nil, &d), &again); err != nil {
			t.Fatalf("re-encoding of accepted input rejected: %v", err)
		}
		if again.Allow != d.Allow || again.Status != d.Status || again.Reason != d.Reason || len(again.Pool) != len(d.Pool) {
			t.Fatalf("round trip changed %+v to %+v", d, again)
		}
	})
}

// FuzzDecodeBudget decodes answers of both ABI versions: whatever is accepted
// re-encodes to the same budget, and a version 1 answer never sets the fields version 1
// does not have.
func FuzzDecodeBudget(f *testing.F) {
	for _, tt := range budgetCases {
		f.Add(uint8(2), AppendBudget(nil, &tt.b))
		f.Add(uint8(1), AppendBudgetV(nil, &tt.b, 1))
	}
	f.Fuzz(func(t *testing.T, v uint8, b []byte) {
		version := int(v%2) + 1
		var got Budget
		if DecodeBudgetV(b, &got, version) != nil {
			return
		}
		if version == 1 && got != v1(got) {
			t.Fatalf("v1 answer set later fields: %+v", got)
		}
		if got.Network > NetworkHost {
			t.Fatalf("accepted network %d", got.Network)
		}
		var again Budget
		if err := DecodeBudgetV(AppendBudgetV(nil, &got, version), &again, version); err != nil || again != got {
			t.Fatalf("round trip: %+v -> %+v, %v", got, again, err)
		}
	})
}

func FuzzDecodeRouteRequest(f *testing.F) {
	for _, tt := range routeCases {
		f.Add(AppendRouteRequest(nil, &tt.req))
	}
	view := RouteView{Command: []string{"stale"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RouteRequest
		err := DecodeRouteRequest(b, &r)
		verr := DecodeRouteView(b, &view)
		if err == nil && verr != nil {
			t.Fatalf("copying decoder accepted what the view rejected: %v", verr)
		}
		if err != nil {
			return
		}
		if !sameView(&r, &view) {
			t.Fatalf("view %+v, copying decoder %+v", view, r)
		}
		var again RouteRequest
		if err := DecodeRouteRequest(AppendRouteRequest(nil, &r), &again); err != nil {
			t.Fatalf("re-encoding of accepted input rejected: %v", err)
		}
		if len(r.Labels) <= 1 && !bytes.Equal(AppendRouteRequest(nil, &again), AppendRouteRequest(nil, &r)) {
			t.Fatalf("round trip changed %+v to %+v", r, again)
		}
	})
}

func FuzzDecodeBudgetRequest(f *testing.F) {
	for _, tt := range budgetCases {
		req := &BudgetRequest{Tenant: "t", Labels: map[string]string{"tier": "pro"}, Defaults: tt.b, Max: tt.b}
		f.Add(uint8(2), AppendBudgetRequest(nil, req))
		f.Add(uint8(1), AppendBudgetRequestV(nil, req, 1))
	}
	f.Fuzz(func(t *testing.T, v uint8, b []byte) {
		version := int(v%2) + 1
		var r BudgetRequest
		if DecodeBudgetRequestV(b, &r, version) != nil {
			return
		}
		var again BudgetRequest
		if err := DecodeBudgetRequestV(AppendBudgetRequestV(nil, &r, version), &again, version); err != nil {
			t.Fatalf("re-encoding of accepted input rejected: %v", err)
		}
		if again.Defaults != r.Defaults || again.Max != r.Max {
			t.Fatalf("round trip changed budgets %+v to %+v", r, again)
		}
	})
}

// sameView reports whether a view shows the same request as r.
func sameView(r *RouteRequest, v *RouteView) bool {
	labels := map[string]string{}
	for k, val := range v.Labels.All() {
		labels[k] = val
	}
	if len(r.Labels) == 0 && len(labels) == 0 {
		labels = r.Labels
	}
	for k, want := range r.Labels {
		if got, ok := v.Labels.Get(k); !ok || got != want {
			return false
		}
	}
	return r.Tenant == v.Tenant && r.Method == v.Method && r.Route == v.Route && r.SandboxID == v.SandboxID &&
		slices.Equal(r.Command, v.Command) && maps.Equal(r.Labels, labels) && v.Labels.Len() == len(r.Labels)
}

func FuzzDecodeBudgetView(f *testing.F) {
	for _, tt := range budgetCases {
		f.Add(AppendBudgetRequest(nil, &BudgetRequest{Tenant: "t", Labels: map[string]string{"tier": "pro"}, Defaults: tt.b, Max: tt.b}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r BudgetRequest
		var v BudgetView
		err := DecodeBudgetRequest(b, &r)
		verr := DecodeBudgetView(b, &v)
		if err == nil && (verr != nil || v.Tenant != r.Tenant || v.Labels.Len() != len(r.Labels) || v.Max != r.Max || v.Defaults != r.Defaults) {
			t.Fatalf("view %+v (%v) differs from %+v", v, verr, r)
		}
	})
}
