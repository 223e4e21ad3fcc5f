package wire

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// The fast paths must agree with the general code on every input: the fast decoder may
// decline anything, but what it accepts the general decoder accepts with the same view.

// fastCases are requests around the fast decoder's limits.
var fastCases = []struct {
	name string
	req  RouteRequest
	fast bool // all lengths and counts below 128
}{
	{name: "empty", req: RouteRequest{}, fast: true},
	{name: "exec", req: routeCases[1].req, fast: true},
	{name: "127-byte strings", req: RouteRequest{Tenant: strings.Repeat("t", 127), Command: []string{strings.Repeat("c", 127), ""}}, fast: true},
	{name: "128-byte tenant", req: RouteRequest{Tenant: strings.Repeat("t", 128)}},
	{name: "128-byte label", req: RouteRequest{Labels: map[string]string{"k": strings.Repeat("v", 128)}}},
	{name: "128-byte argument", req: RouteRequest{Command: []string{"sh", strings.Repeat("a", 128)}}},
	{name: "127 arguments", req: RouteRequest{Command: slices.Repeat([]string{"a"}, 127)}, fast: true},
	{name: "128 arguments", req: RouteRequest{Command: slices.Repeat([]string{"a"}, 128)}},
	{name: "128 labels", req: RouteRequest{Labels: manyLabels(128)}},
}

func manyLabels(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[string(rune('A'+i))] = "v"
	}
	return m
}

// sameRouteView reports whether two views show the same request, labels in the same order.
func sameRouteView(a, b *RouteView) bool {
	return a.Tenant == b.Tenant && a.Method == b.Method && a.Route == b.Route && a.SandboxID == b.SandboxID &&
		a.Labels.n == b.Labels.n && bytes.Equal(a.Labels.raw, b.Labels.raw) && slices.Equal(a.Command, b.Command)
}

// checkFast fails t if routeViewFast accepts b and the general decoder does not agree,
// and returns whether it accepted.
func checkFast(t *testing.T, b []byte) bool {
	t.Helper()
	fast := RouteView{Command: []string{"stale", "stale"}}
	if !routeViewFast(b, &fast) {
		return false
	}
	var slow RouteView
	if err := decodeRouteView(b, &slow); err != nil {
		t.Fatalf("fast path accepted % x, general decoder: %v", b, err)
	}
	if !sameRouteView(&fast, &slow) {
		t.Fatalf("fast path %+v, general decoder %+v", fast, slow)
	}
	return true
}

func TestRouteViewFast(t *testing.T) {
	t.Parallel()
	for _, tt := range fastCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := AppendRouteRequest(nil, &tt.req)
			if got := checkFast(t, b); got != tt.fast {
				t.Fatalf("fast path took it: %v, want %v", got, tt.fast)
			}
			var v RouteView
			if err := DecodeRouteView(b, &v); err != nil || !sameView(&tt.req, &v) {
				t.Fatalf("DecodeRouteView: %+v, %v", v, err)
			}
		})
	}
}

// TestRouteViewFastMalformed cuts and changes valid requests at every byte.
func TestRouteViewFastMalformed(t *testing.T) {
	t.Parallel()
	for _, tt := range fastCases {
		b := AppendRouteRequest(nil, &tt.req)
		for i := range len(b) {
			checkFast(t, b[:i])
			for _, c := range []byte{0, 1, 2, 0x7f, 0x80, 0xff} {
				m := slices.Clone(b)
				m[i] = c
				checkFast(t, m)
				checkFast(t, append(m, 0))
			}
		}
	}
}

func FuzzRouteViewFast(f *testing.F) {
	for _, tt := range fastCases {
		f.Add(AppendRouteRequest(nil, &tt.req))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFast(t, b) })
}
