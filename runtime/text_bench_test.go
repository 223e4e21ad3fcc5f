package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// textBenchBytes is how much output the text index benchmarks write.
const textBenchBytes = 64 << 20

// mixedOutput returns n bytes of terminal-like output: lines of ASCII with box
// drawing, accented letters, an emoji now and then, and colour escapes (about 8% of
// the bytes are not ASCII).
func mixedOutput(n int) []byte {
	rng := rand.New(rand.NewPCG(17, 1))
	words := []string{"build", "ok", "src/main.go", "\x1b[32mPASS\x1b[0m", "caf\u00e9", "na\u00efve", "\u2500\u2500\u2500", "\u2502", "\u2714", "\U0001F680", "0.123s", "github.com/sandgate"}
	var b strings.Builder
	for b.Len() < n {
		for k := 2 + rng.IntN(12); k > 0; k-- {
			if rng.IntN(3) == 0 {
				b.WriteString(words[rng.IntN(len(words))])
			} else {
				for j := 1 + rng.IntN(9); j > 0; j-- {
					b.WriteByte(byte('a' + rng.IntN(26)))
				}
			}
			b.WriteByte(' ')
		}
		b.WriteString("\r\n")
	}
	return []byte(b.String()[:n])
}

// BenchmarkRingAppendText writes 64 MiB of output through ring.append in PTY reads of
// 4 KiB, into a 1 MiB ring, with the text index and without, alternating: mixed
// terminal output (see mixedOutput) and plain ASCII. It reports both p50 throughputs,
// "ratio" (with/without) and "cpu-ratio".
func BenchmarkRingAppendText(b *testing.B) {
	ascii := mixedOutput(1 << 20)
	for i, c := range ascii {
		if c >= 0x80 {
			ascii[i] = 'x'
		}
	}
	for _, bc := range []struct {
		name string
		data []byte
	}{{"mixed", mixedOutput(1 << 20)}, {"ascii", ascii}} {
		b.Run(bc.name, func(b *testing.B) {
			const chunk = 4 << 10
			run := func(r *ring) time.Duration {
				begin := time.Now()
				for range textBenchBytes / len(bc.data) {
					for p := bc.data; len(p) > 0; p = p[chunk:] {
						r.append(StreamPTY, p[:chunk], false)
					}
				}
				return time.Since(begin)
			}
			var m textRatio
			b.SetBytes(textBenchBytes)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for j := range 4 {
					plain := func() time.Duration { return run(newRing(1 << 20)) }
					text := func() time.Duration { return run(newTextRing(1 << 20)) }
					m.pair((i+j)%2 == 0, plain, text)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

// textRatio collects the wall and CPU times of runs without and with the text index.
type textRatio struct {
	plain, text, plainCPU, textCPU []time.Duration
}

// pair times one run of each, plain first or not.
func (m *textRatio) pair(plainFirst bool, plain, text func() time.Duration) {
	timed := func(f func() time.Duration, d, cpu *[]time.Duration) {
		c0 := cpuTime()
		*d = append(*d, f())
		*cpu = append(*cpu, cpuTime()-c0)
	}
	if plainFirst {
		timed(plain, &m.plain, &m.plainCPU)
		timed(text, &m.text, &m.textCPU)
	} else {
		timed(text, &m.text, &m.textCPU)
		timed(plain, &m.plain, &m.plainCPU)
	}
}

// report reports the p50 throughputs, "ratio" (with/without: the median over pairs of
// the ratio of their wall times, which a load that drifts between pairs disturbs less
// than a ratio of medians) and "cpu-ratio" (the same of the CPU time the test process
// spent per run: less noisy on a loaded machine, but it counts every goroutine's, and
// not the writer's); and the p50 CPU time of a run without the index, "plain-cpu-ms",
// and the median over pairs of what the index added to it, "index-cpu-ms".
func (m *textRatio) report(b *testing.B) {
	mbps := func(d time.Duration) float64 { return float64(textBenchBytes) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(p50(m.plain)), "plain-MiB/s")
	b.ReportMetric(mbps(p50(m.text)), "text-MiB/s")
	b.ReportMetric(pairRatio(m.plain, m.text), "ratio")
	b.ReportMetric(pairRatio(m.plainCPU, m.textCPU), "cpu-ratio")
	added := make([]time.Duration, len(m.textCPU))
	for i := range added {
		added[i] = m.textCPU[i] - m.plainCPU[i]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(p50(m.plainCPU)), "plain-cpu-ms")
	b.ReportMetric(ms(p50(added)), "index-cpu-ms")
}

// pairRatio returns the median of a[i]/b[i].
func pairRatio(a, b []time.Duration) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// BenchmarkPTYCatText cats a 64 MiB file through a PTY process read by one
// subscriber, with the process's text index and with it taken away before any output,
// alternating: mixed terminal output (see mixedOutput) and the same with every byte
// that is not ASCII made an "x". It reports both p50 throughputs, "ratio" (with/without;
// the goal is >= 0.95) and "cpu-ratio".
func BenchmarkPTYCatText(b *testing.B) {
	mixed := mixedOutput(textBenchBytes)
	b.Run("mixed", func(b *testing.B) { benchPTYCat(b, mixed) })
	ascii := bytes.Map(func(r rune) rune {
		if r >= utf8.RuneSelf {
			return 'x'
		}
		return r
	}, mixed)
	b.Run("ascii", func(b *testing.B) { benchPTYCat(b, ascii) })
}

func benchPTYCat(b *testing.B, data []byte) {
	file := filepath.Join(b.TempDir(), "out.txt")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	s := newTestSandbox(b, &Config{OutputBufferBytes: ptyRing})
	ctx := context.Background()
	var want int
	run := func(index bool) time.Duration {
		p, err := s.Start(ctx, StartOptions{Argv: []string{"sh", "-c", `stty -echo; printf R; read x; exec cat "$0"`, file}, PTY: &WinSize{Cols: 80, Rows: 24}})
		if err != nil {
			b.Fatal(err)
		}
		if !index {
			p.ring.mu.Lock()
			p.ring.text = nil
			p.ring.mu.Unlock()
		}
		sub := p.Subscribe(0)
		defer sub.Close()
		waitOutput(b, ctx, sub, "R") // echo is off: the count is the same every run
		begin := time.Now()
		if _, err := p.Write([]byte("\n")); err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			ev, err := sub.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == EventGap {
				b.Fatalf("gap of %d bytes", ev.To-ev.From)
			}
			n += len(ev.Data)
		}
		d := time.Since(begin)
		if want == 0 {
			want = n
		} else if n != want {
			b.Fatalf("read %d bytes, then %d", want, n)
		}
		if _, err := p.TextEnd(); index != (err == nil) {
			b.Fatalf("index %v: TextEnd: %v", index, err)
		}
		_ = s.Remove(ctx, p.ID())
		return d
	}
	var m textRatio
	b.SetBytes(textBenchBytes)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m.pair(i%2 == 0, func() time.Duration { return run(false) }, func() time.Duration { return run(true) })
	}
	b.StopTimer()
	m.report(b)
}

// BenchmarkTextCount compares the index's decoder counting 1 MiB of output (mixed,
// then ASCII) with utf8.Valid checking the same bytes, alternating in batches of 20,
// by CPU time. It reports "speed-vs-valid" (the decoder's speed over Valid's; 1 is
// as fast) and the decoder's CPU-time throughput.
func BenchmarkTextCount(b *testing.B) {
	mixed := mixedOutput(1 << 20)
	ascii := bytes.Map(func(r rune) rune { return min(r, 'x') }, mixed)
	for _, bc := range []struct {
		name string
		data []byte
	}{{"mixed", mixed}, {"ascii", ascii}} {
		b.Run(bc.name, func(b *testing.B) {
			var count, valid []time.Duration
			for b.Loop() {
				for range 5 {
					c0 := cpuTime()
					for range 20 {
						var st textState
						st.feed(nil, bc.data, false)
					}
					c1 := cpuTime()
					for range 20 {
						utf8.Valid(bc.data)
					}
					count, valid = append(count, c1-c0), append(valid, cpuTime()-c1)
				}
			}
			b.ReportMetric(pairRatio(valid, count), "speed-vs-valid")
			b.ReportMetric(20*float64(len(bc.data))/p50(count).Seconds()/(1<<20), "count-cpu-MiB/s")
		})
	}
}
