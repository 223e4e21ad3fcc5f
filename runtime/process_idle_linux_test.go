package runtime

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestIdleProcessesHoldNoThreads starts processes and sessions that go quiet and checks
// that waiting for them costs no OS thread each (a thread blocked in waitid costs tens
// of KiB): the exit is awaited on a pidfd through the netpoller, as is the output.
func TestIdleProcessesHoldNoThreads(t *testing.T) { // not parallel: it counts the process's threads
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	before := threads(t)
	const n = 16
	for i := range n {
		o := StartOptions{Command: "echo ready; exec sleep 60"}
		if i%2 == 1 {
			o.PTY = &WinSize{Cols: 80, Rows: 24}
		}
		p, err := s.Start(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		sub := p.Subscribe(0)
		waitOutput(t, ctx, sub, "ready")
		sub.Close()
		t.Cleanup(func() { _ = p.Kill(ctx) })
	}
	for range n / 2 {
		sessRun(t, sessNewTest(t, sessTestConfig(t)), "true")
	}
	// A goroutine blocked in a syscall gets its thread taken from it within
	// milliseconds; look for a while and keep the most seen.
	most := 0
	for range 20 {
		most = max(most, threads(t))
		time.Sleep(10 * time.Millisecond)
	}
	if grew := most - before; grew >= n/2 {
		t.Fatalf("%d idle processes and %d sessions added %d threads (%d -> %d)", n, n/2, grew, before, most)
	}
}

// threads is how many OS threads this process has.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("\nThreads:"))
	if !ok {
		t.Fatal("no Threads line in /proc/self/status")
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	v, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
