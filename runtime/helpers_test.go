package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"
	"golang.org/x/sys/unix"
)

// bound is the generous limit for waits that normally take milliseconds: tests run on
// loaded 2-core machines next to other suites.
const bound = 30 * time.Second

// testDriver is the driver of the sandboxes tests make without one:
// $SANDGATE_TEST_DRIVER, "namespace", "namespace-userns" or "local" (the default).
var testDriver = func() Driver {
	switch os.Getenv("SANDGATE_TEST_DRIVER") {
	case "namespace":
		return NamespaceDriver{}
	case "namespace-userns":
		return NamespaceDriver{UserNS: true}
	}
	return LocalDriver{}
}()

// newTestSandbox makes a sandbox in a temp dir, closed at cleanup.
func newTestSandbox(tb testing.TB, cfg *Config) *Sandbox {
	tb.Helper()
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Dir == "" {
		c.Dir = tb.TempDir()
	}
	if c.Driver == nil && !c.NoCgroups { // the namespace driver needs cgroups
		c.Driver = testDriver
	}
	s, err := New(&c)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
		checkCgroupsGone(tb, s)
	})
	return s
}

func testCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	tb.Cleanup(cancel)
	return ctx
}

// collected is everything a subscription delivered until io.EOF.
type collected struct {
	stdout, stderr, pty []byte
	events              []Event // gaps and exit; output events are not kept
	exit                *ExitStatus
	next                int64 // offset after the last output byte seen
}

// collect reads sub to io.EOF, checking that offsets are contiguous.
func collect(tb testing.TB, ctx context.Context, sub *Subscription) collected {
	tb.Helper()
	var c collected
	c.next = sub.Offset()
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			return c
		}
		if err != nil {
			tb.Fatalf("Next: %v", err)
		}
		switch ev.Kind {
		case EventOutput:
			if ev.Offset != c.next {
				tb.Fatalf("output at offset %d, want %d", ev.Offset, c.next)
			}
			c.next += int64(len(ev.Data))
			switch ev.Stream {
			case StreamStdout:
				c.stdout = append(c.stdout, ev.Data...)
			case StreamStderr:
				c.stderr = append(c.stderr, ev.Data...)
			case StreamPTY:
				c.pty = append(c.pty, ev.Data...)
			}
		case EventGap:
			if ev.From != c.next || ev.To <= ev.From {
				tb.Fatalf("gap [%d,%d) at offset %d", ev.From, ev.To, c.next)
			}
			c.next = ev.To
			c.events = append(c.events, ev)
		case EventExit:
			e := ev.Exit
			c.exit = &e
			c.events = append(c.events, ev)
		}
	}
}

// waitOutput reads sub until the accumulated output contains want, and returns it.
func waitOutput(tb testing.TB, ctx context.Context, sub *Subscription, want string) string {
	tb.Helper()
	var buf bytes.Buffer
	for !strings.Contains(buf.String(), want) {
		ev, err := sub.Next(ctx)
		if err != nil {
			tb.Fatalf("waiting for %q: %v; got %q", want, err, buf.String())
		}
		if ev.Kind == EventExit {
			tb.Fatalf("exited (%+v) waiting for %q; got %q", ev.Exit, want, buf.String())
		}
		buf.Write(ev.Data)
	}
	return buf.String()
}

// pidGone reports whether pid no longer runs: missing, or a zombie nobody reaped yet
// (orphans are re-parented to the test binary, a subreaper).
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits until pid has exited, failing after bound. It waits on a pidfd, which
// turns readable when the process exits (before anyone reaps it).
func waitGone(tb testing.TB, pid int) {
	tb.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // ESRCH: already gone and reaped
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(bound)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		if n == 1 {
			if !pidGone(pid) { // and /proc agrees: missing, or a zombie
				tb.Fatalf("pidfd of %d readable but /proc shows it running", pid)
			}
			return
		}
		if err != nil && errors.Is(err, unix.EINTR) {
			continue
		}
		tb.Fatalf("pid %d still running after %v (err %v)", pid, bound, err)
	}
}

// firstInt parses the first line of b as a pid.
func firstInt(tb testing.TB, b []byte) int {
	tb.Helper()
	line, _, _ := strings.Cut(string(b), "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		tb.Fatalf("no pid in %q", b)
	}
	return n
}

func killPid(pid int) error { return unix.Kill(pid, unix.SIGKILL) }

// hostPID returns the pid on the host of the process that sandbox s's processes know
// as pid: pid itself on the local driver; on the namespace driver the process of s's
// pid namespace whose pid there is pid, or -1 when none lives (pidGone(-1) is true and
// waitGone(-1) returns at once).
func hostPID(tb testing.TB, s *Sandbox, pid int) int {
	tb.Helper()
	if s == nil {
		return pid
	}
	h, ok := s.h.(*nsHost)
	if !ok {
		return pid
	}
	return proctest.HostPID("/proc", h.in.PID(), pid)
}
