package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendDecisionShort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Decision
	}{
		{name: "allow", d: Decision{Allow: true}},
		{name: "deny", d: Decision{Reason: "no"}},
		{name: "deny 403", d: Decision{Status: 403, Reason: "blocked by guard: mkfs"}},
		{name: "deny 429", d: Decision{Status: 429, Reason: strings.Repeat("r", 127)}},
		{name: "largest short status", d: Decision{Status: 1<<14 - 1}},
		{name: "status 127", d: Decision{Status: 127}},
		{name: "status 128", d: Decision{Status: 128}},
		{name: "negative status", d: Decision{Status: -1}},
		{name: "long status", d: Decision{Status: 1 << 14}},
		{name: "long reason", d: Decision{Reason: strings.Repeat("r", 128)}},
		{name: "empty pool", d: Decision{Allow: true, Pool: map[string]string{}}},
		{name: "pool", d: Decision{Allow: true, Pool: map[string]string{"pool": "gpu"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verdict := VerdictDeny
			if tt.d.Allow {
				verdict = VerdictAllow
			}
			want := appendDecision([]byte("xy"), verdict, max(tt.d.Status, 0), tt.d.Reason, tt.d.Pool)
			for _, dst := range [][]byte{[]byte("xy"), append(make([]byte, 0, 512), "xy"...)} {
				if got := AppendDecision(dst, &tt.d); !bytes.Equal(got, want) {
					t.Fatalf("got % x, want % x", got, want)
				}
			}
		})
	}
}

func TestAppendDecisionAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	d := Decision{Status: 403, Reason: "blocked"}
	if n := testing.AllocsPerRun(100, func() { buf = AppendDecision(buf[:0], &d) }); n != 0 {
		t.Fatalf("AppendDecision allocates %v times", n)
	}
}
