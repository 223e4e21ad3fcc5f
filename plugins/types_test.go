package plugins

import "testing"

// FuzzClamp: whatever a plugin answers, the budget stays within [1, max] and a zero
// field takes the default.
func FuzzClamp(f *testing.F) {
	f.Add(int64(0), int64(1), int64(1<<62), int64(-5), int64(64), int64(1<<40), int64(0), int64(3), int64(-1), byte(3))
	f.Add(int64(1), int64(1), int64(1), int64(1), int64(1), int64(1), int64(1), int64(1), int64(1), byte(1))
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g, h, i, j int64, net byte) {
		def := Budget{IdleTTLMS: 10, MaxDurationMS: 20, MaxProcesses: 8, MaxExecTimeoutMS: 30, OutputBufferBytes: 40,
			MemoryBytes: 50, Pids: 6, CPUMillis: 70, DiskBytes: 80, Network: NetworkNone}
		max := Budget{IdleTTLMS: 100, MaxDurationMS: 20, MaxProcesses: 64, MaxExecTimeoutMS: 300, OutputBufferBytes: 400,
			MemoryBytes: 500, Pids: 60, CPUMillis: 700, DiskBytes: 800, Network: NetworkLoopback}
		got := clamp(Budget{a, b, c, d, e, g, h, i, j, networkOf(net)}, def, max)
		in := [...]int64{a, b, c, d, e, g, h, i, j, int64(networkOf(net).code())}
		gv := [...]int64{got.IdleTTLMS, got.MaxDurationMS, got.MaxProcesses, got.MaxExecTimeoutMS, got.OutputBufferBytes,
			got.MemoryBytes, got.Pids, got.CPUMillis, got.DiskBytes, int64(got.Network.code())}
		dv := [...]int64{def.IdleTTLMS, def.MaxDurationMS, def.MaxProcesses, def.MaxExecTimeoutMS, def.OutputBufferBytes,
			def.MemoryBytes, def.Pids, def.CPUMillis, def.DiskBytes, int64(def.Network.code())}
		mv := [...]int64{max.IdleTTLMS, max.MaxDurationMS, max.MaxProcesses, max.MaxExecTimeoutMS, max.OutputBufferBytes,
			max.MemoryBytes, max.Pids, max.CPUMillis, max.DiskBytes, int64(max.Network.code())}
		for i := range gv {
			switch {
			case gv[i] < 1 || gv[i] > mv[i]:
				t.Fatalf("field %d: %d outside [1, %d]", i, gv[i], mv[i])
			case in[i] <= 0 && gv[i] != dv[i]:
				t.Fatalf("field %d: no opinion gave %d, want default %d", i, gv[i], dv[i])
			case in[i] > 0 && gv[i] != min(in[i], mv[i]):
				t.Fatalf("field %d: %d gave %d", i, in[i], gv[i])
			}
		}
	})
}
