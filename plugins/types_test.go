package plugins

import "testing"

// FuzzClamp: whatever a plugin answers, the budget stays within [1, max] and a zero
// field takes the default.
func FuzzClamp(f *testing.F) {
	f.Add(int64(0), int64(1), int64(1<<62), int64(-5), int64(64))
	f.Fuzz(func(t *testing.T, a, b, c, d, e int64) {
		def := Budget{IdleTTLMS: 10, MaxDurationMS: 20, MaxProcesses: 8, MaxExecTimeoutMS: 30, OutputBufferBytes: 40}
		max := Budget{IdleTTLMS: 100, MaxDurationMS: 20, MaxProcesses: 64, MaxExecTimeoutMS: 300, OutputBufferBytes: 400}
		got := clamp(Budget{a, b, c, d, e}, def, max)
		in := [5]int64{a, b, c, d, e}
		gv := [5]int64{got.IdleTTLMS, got.MaxDurationMS, got.MaxProcesses, got.MaxExecTimeoutMS, got.OutputBufferBytes}
		dv := [5]int64{def.IdleTTLMS, def.MaxDurationMS, def.MaxProcesses, def.MaxExecTimeoutMS, def.OutputBufferBytes}
		mv := [5]int64{max.IdleTTLMS, max.MaxDurationMS, max.MaxProcesses, max.MaxExecTimeoutMS, max.OutputBufferBytes}
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
