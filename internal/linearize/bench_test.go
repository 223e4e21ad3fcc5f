package linearize

import "testing"

// BenchmarkCheckEventLog checks the history of four clients that each append and
// read 100 times, concurrently, on one log: the size of a scenario's busiest object.
func BenchmarkCheckEventLog(b *testing.B) {
	r := NewRecorder(nil)
	hammerLog(r, &memLog{}, 4, 100)
	b.ResetTimer()
	for b.Loop() {
		if err := r.Check(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Len()), "ops")
}
