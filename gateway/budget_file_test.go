package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

func TestParseBudgets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Budgets
		wantErr string // a substring of the error; "" for none
	}{
		{name: "empty object", in: `{}`},
		{name: "every field", in: `{"default": {"idle_ttl_ms": 1000, "max_duration_ms": 2000, "max_processes": 3,
			"max_exec_timeout_ms": 4000, "output_buffer_bytes": 5, "memory_bytes": 6, "pids": 7, "cpu_millis": 8,
			"disk_bytes": 9, "network": "none"}, "max": {"network": "host", "memory_bytes": 1073741824}}`,
			want: Budgets{
				Default: actor.Budget{IdleTTL: time.Second, MaxDuration: 2 * time.Second, MaxProcesses: 3, MaxExecTimeout: 4 * time.Second,
					OutputBufferBytes: 5, MemoryBytes: 6, Pids: 7, CPUMillis: 8, DiskBytes: 9, Network: actor.NetworkNone},
				Max: actor.Budget{Network: actor.NetworkHost, MemoryBytes: 1 << 30},
			}},
		{name: "max only", in: `{"max": {"pids": 50}}`, want: Budgets{Max: actor.Budget{Pids: 50}}},
		{name: "unknown top-level field", in: `{"defaults": {}}`, wantErr: `unknown field "defaults"`},
		{name: "unknown budget field", in: `{"max": {"memory": 1}}`, wantErr: `unknown field "max.memory"`},
		{name: "miscased field", in: `{"default": {"Memory_Bytes": 1}}`, wantErr: `"default.Memory_Bytes"`},
		{name: "field twice", in: `{"max": {"pids": 1, "pids": 2}}`, wantErr: `"max.pids" is given twice`},
		{name: "object twice", in: `{"max": {}, "max": {}}`, wantErr: `"max" is given twice`},
		{name: "zero", in: `{"max": {"pids": 0}}`, wantErr: `"max.pids" must be a positive integer`},
		{name: "fraction", in: `{"max": {"cpu_millis": 1.5}}`, wantErr: `"cpu_millis" must be a positive integer, not 1.5`},
		{name: "string number", in: `{"max": {"pids": "5"}}`, wantErr: `"pids" must be a positive integer, not "5"`},
		{name: "bad network", in: `{"default": {"network": "wan"}}`, wantErr: `"default.network" is "wan"`},
		{name: "default above max", in: `{"default": {"memory_bytes": 2048}, "max": {"memory_bytes": 1024}}`, wantErr: "memory_bytes 2048 is above its max 1024"},
		{name: "network above max", in: `{"default": {"network": "host"}, "max": {"network": "loopback"}}`, wantErr: "network"},
		{name: "not an object", in: `[]`, wantErr: "must be a JSON object"},
		{name: "budget not an object", in: `{"max": 5}`, wantErr: `"max" must be a budget object`},
		{name: "trailing data", in: `{} {}`, wantErr: "trailing data"},
		{name: "not JSON", in: `{`, wantErr: "budget file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseBudgets([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadBudgets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "budget.json")
	if err := os.WriteFile(path, []byte(`{"max": {"pids": 9}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBudgets(path)
	if err != nil || b.Max.Pids != 9 {
		t.Fatalf("LoadBudgets = %+v, %v", b, err)
	}
	if _, err := LoadBudgets(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func FuzzParseBudgets(f *testing.F) {
	for _, s := range []string{`{}`, `{"default": {"pids": 1, "network": "none"}, "max": {"pids": 2}}`, `{"max": {"memory_bytes": 1e3}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		bs, err := ParseBudgets(b)
		if err != nil {
			return
		}
		d, m, err := actor.OperatorBudgets(bs.Default, bs.Max)
		if err != nil {
			t.Fatalf("accepted %q but its budgets are invalid: %v", b, err)
		}
		if d.Pids > m.Pids || d.MemoryBytes > m.MemoryBytes {
			t.Fatalf("default %+v above max %+v", d, m)
		}
	})
}
