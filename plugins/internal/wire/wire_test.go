package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

var routeCases = []struct {
	name string
	req  RouteRequest
}{
	{name: "empty", req: RouteRequest{}},
	{name: "exec", req: RouteRequest{
		Tenant: "acme", Method: "POST", Route: "POST /v1/sandboxes/{sb}/exec", SandboxID: "dev1",
		Labels: map[string]string{"tier": "free", "pool": "gpu"}, Command: []string{"sh", "-c", "echo hi"},
	}},
	{name: "unicode", req: RouteRequest{Tenant: "ténant", Command: []string{"", "ü"}}},
}

var decisionCases = []struct {
	name string
	d    Decision
}{
	{name: "allow", d: Decision{Allow: true}},
	{name: "allow pool", d: Decision{Allow: true, Pool: map[string]string{"pool": "x"}}},
	{name: "deny", d: Decision{Status: 403, Reason: "blocked by guard: mkfs"}},
	{name: "deny 429", d: Decision{Status: 429, Reason: "slow down"}},
	{name: "deny default status", d: Decision{Reason: "no"}},
}

var budgetCases = []struct {
	name string
	b    Budget
}{
	{name: "zero", b: Budget{}},
	{name: "full v1", b: Budget{IdleTTLMS: 1, MaxDurationMS: 1 << 40, MaxProcesses: 32, MaxExecTimeoutMS: 600000, OutputBufferBytes: 1 << 20}},
	{name: "full", b: Budget{IdleTTLMS: 1, MaxDurationMS: 1 << 40, MaxProcesses: 32, MaxExecTimeoutMS: 600000, OutputBufferBytes: 1 << 20,
		MemoryBytes: 1 << 29, Pids: 256, CPUMillis: 1500, DiskBytes: 1 << 30, Network: NetworkHost}},
	{name: "network none", b: Budget{Network: NetworkNone}},
}

// v1 returns b without the fields ABI version 1 does not have.
func v1(b Budget) Budget {
	b.MemoryBytes, b.Pids, b.CPUMillis, b.DiskBytes, b.Network = 0, 0, 0, 0, NetworkDefault
	return b
}

// TestBudgetVersions: version 1 encodes and decodes only the first five fields, so a
// version 1 module reads and writes what it always did; version 2 carries them all.
func TestBudgetVersions(t *testing.T) {
	t.Parallel()
	full := budgetCases[2].b
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			t.Parallel()
			want := full
			if v == 1 {
				want = v1(full)
			}
			var got Budget
			if err := DecodeBudgetV(AppendBudgetV(nil, &full, v), &got, v); err != nil || got != want {
				t.Fatalf("budget: got %+v, %v; want %+v", got, err, want)
			}
			req := BudgetRequest{Tenant: "t", Defaults: full, Max: full}
			var gr BudgetRequest
			if err := DecodeBudgetRequestV(AppendBudgetRequestV(nil, &req, v), &gr, v); err != nil || gr.Defaults != want || gr.Max != want {
				t.Fatalf("request: got %+v, %v; want budgets %+v", gr, err, want)
			}
		})
	}
	// A version 1 answer, byte for byte as a version 1 module writes it: tag and five
	// integers. Read as version 2 it is truncated.
	old := []byte{TagBudget, 1, 2, 3, 4, 5}
	var got Budget
	if err := DecodeBudgetV(old, &got, 1); err != nil || got != (Budget{IdleTTLMS: 1, MaxDurationMS: 2, MaxProcesses: 3, MaxExecTimeoutMS: 4, OutputBufferBytes: 5}) {
		t.Fatalf("v1 answer: got %+v, %v", got, err)
	}
	if err := DecodeBudgetV(old, &got, 2); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v1 bytes read as v2: %v, want ErrMalformed", err)
	}
	if err := DecodeBudgetV(AppendBudgetV(nil, &full, 2), &got, 1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v2 bytes read as v1: %v, want ErrMalformed (trailing)", err)
	}
}

func TestRouteRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range routeCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := AppendRouteRequest(nil, &tt.req)
			var got RouteRequest
			if err := DecodeRouteRequest(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.req) {
				t.Fatalf("got %+v, want %+v", got, tt.req)
			}
		})
	}
}

func TestBudgetRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range budgetCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := BudgetRequest{Tenant: "t", SandboxID: "sb", Labels: map[string]string{"a": "b"}, Reload: true, Defaults: tt.b, Max: tt.b}
			var got BudgetRequest
			if err := DecodeBudgetRequest(AppendBudgetRequest(nil, &want), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			var gb Budget
			if err := DecodeBudget(AppendBudget(nil, &tt.b), &gb); err != nil || gb != tt.b {
				t.Fatalf("budget: got %+v, %v; want %+v", gb, err, tt.b)
			}
		})
	}
}

func TestDecisionRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range decisionCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got Decision
			if err := DecodeDecision(AppendDecision(nil, &tt.d), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.d) {
				t.Fatalf("got %+v, want %+v", got, tt.d)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	ok := AppendDecision(nil, &Decision{Allow: true})
	tests := []struct {
		name string
		b    []byte
	}{
		{name: "empty", b: nil},
		{name: "wrong tag", b: AppendBudget(nil, &Budget{})},
		{name: "trailing", b: append(append([]byte{}, ok...), 0)},
		{name: "truncated", b: ok[:len(ok)-1]},
		{name: "bad verdict", b: []byte{TagDecision, 7, 0, 0, 0}},
		{name: "status on allow", b: []byte{TagDecision, VerdictAllow, 1, 0, 0}},
		{name: "status 500", b: AppendDecision(nil, &Decision{Status: 500})},
		{name: "string past end", b: []byte{TagDecision, VerdictDeny, 0, 9, 'a'}},
		{name: "not utf8", b: []byte{TagDecision, VerdictDeny, 0, 1, 0xff, 0}},
		{name: "huge count", b: []byte{TagDecision, VerdictAllow, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{name: "duplicate label", b: []byte{TagDecision, VerdictAllow, 0, 0, 2, 1, 'a', 0, 1, 'a', 0}},
		{name: "bad varint", b: []byte{TagDecision, VerdictAllow, 0x80, 0x80}},
	}
	// Budget answers of version 2.
	for _, bt := range []struct {
		name string
		b    []byte
	}{
		{name: "budget network 4", b: []byte{TagBudget, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}},
		{name: "budget without network", b: []byte{TagBudget, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "budget integer over 63 bits", b: []byte{TagBudget, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 1}},
	} {
		t.Run(bt.name, func(t *testing.T) {
			t.Parallel()
			var b Budget
			if err := DecodeBudget(bt.b, &b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d Decision
			err := DecodeDecision(tt.b, &d)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestEncodeAllocs(t *testing.T) {
	req := routeCases[1].req
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendRouteRequest(buf[:0], &req) }); n != 0 {
		t.Fatalf("AppendRouteRequest allocates %v times", n)
	}
}

func TestRouteViewReusesAndDoesNotAllocate(t *testing.T) {
	var v RouteView
	for _, tt := range routeCases { // reuse across different requests: no stale data
		if err := DecodeRouteView(AppendRouteRequest(nil, &tt.req), &v); err != nil {
			t.Fatal(err)
		}
		if !sameView(&tt.req, &v) {
			t.Fatalf("%s: got %+v, want %+v", tt.name, v, tt.req)
		}
	}
	if got, ok := v.Labels.Get("missing"); ok || got != "" {
		t.Fatalf("Get(missing) = %q, %v", got, ok)
	}
	b := AppendRouteRequest(nil, &routeCases[1].req)
	if n := testing.AllocsPerRun(100, func() {
		_ = DecodeRouteView(b, &v)
		_, _ = v.Labels.Get("pool")
	}); n != 0 {
		t.Fatalf("DecodeRouteView allocates %v times", n)
	}
}
