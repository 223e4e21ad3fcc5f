package wire

import (
	"bytes"
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

func FuzzDecodeBudget(f *testing.F) {
	for _, tt := range budgetCases {
		f.Add(AppendBudget(nil, &tt.b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Budget
		if DecodeBudget(b, &got) != nil {
			return
		}
		var again Budget
		if err := DecodeBudget(AppendBudget(nil, &got), &again); err != nil || again != got {
			t.Fatalf("round trip: %+v -> %+v, %v", got, again, err)
		}
	})
}

func FuzzDecodeRouteRequest(f *testing.F) {
	for _, tt := range routeCases {
		f.Add(AppendRouteRequest(nil, &tt.req))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RouteRequest
		if DecodeRouteRequest(b, &r) != nil {
			return
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
	f.Add(AppendBudgetRequest(nil, &BudgetRequest{Tenant: "t", Labels: map[string]string{"tier": "pro"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r BudgetRequest
		if DecodeBudgetRequest(b, &r) != nil {
			return
		}
		var again BudgetRequest
		if err := DecodeBudgetRequest(AppendBudgetRequest(nil, &r), &again); err != nil {
			t.Fatalf("re-encoding of accepted input rejected: %v", err)
		}
	})
}
