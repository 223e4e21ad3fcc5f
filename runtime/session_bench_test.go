package runtime

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// sessBenchMinSamples is how many latencies a benchmark collects at least, so p50 and p99
// mean something even under -benchtime=1x (extra samples run with the timer stopped).
const sessBenchMinSamples = 300

// sessBenchLatencies runs op b.N times (timed) and more untimed if needed, and reports the
// p50 and p99 latency in microseconds.
func sessBenchLatencies(b *testing.B, op func()) {
	b.Helper()
	lat := make([]time.Duration, 0, max(b.N, sessBenchMinSamples))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		op()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	for len(lat) < sessBenchMinSamples {
		t0 := time.Now()
		op()
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkSessionExec measures one session command round trip against a baseline:
// the raw round trip of a line to a bash over a pipe and its reply, the least any
// shell-backed exec can cost.
func BenchmarkSessionExec(b *testing.B) {
	b.Run("baseline-bash-pipe-echo", func(b *testing.B) {
		cmd := exec.Command("bash", "--noprofile", "--norc")
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		outp, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := bufio.NewReader(outp)
		sessBenchLatencies(b, func() {
			if _, err := io.WriteString(in, "echo x\n"); err != nil {
				b.Fatal(err)
			}
			if _, err := out.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		})
		in.Close()
		_ = cmd.Wait()
	})
	for _, c := range []struct{ name, command, tmp string }{
		{"session-true", "true", ""},
		{"session-echo", "echo hello", ""},
		{"session-external-cmd", "/bin/true", ""},
		// The private directory on the disk file system instead of /dev/shm.
		{"session-true-fifos-in-tmpdir", "true", os.TempDir()},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := sessTestConfig(b)
			cfg.TempDir = c.tmp
			s := sessNewTest(b, cfg)
			ctx := sessTestCtx(b)
			sessBenchLatencies(b, func() {
				r, err := s.Exec(ctx, SessionCommand{Command: c.command})
				if err != nil || r.ExitCode != 0 {
					b.Fatal(r, err)
				}
			})
		})
	}
}
