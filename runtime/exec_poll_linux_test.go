package runtime

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExecPollsReuse: sequential execs of a sandbox wait on one epoll instance, which
// Close closes.
func TestExecPollsReuse(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	var first *os.File
	for i := range 3 {
		res, err := s.Exec(ctx, ExecOptions{Argv: []string{"sh", "-c", "echo out; echo err >&2"}})
		if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
			t.Fatalf("exec %d: %+v, %v", i, res, err)
		}
		s.polls.mu.Lock()
		free := append([]execPoll(nil), s.polls.free...)
		s.polls.mu.Unlock()
		if len(free) != 1 {
			t.Fatalf("after exec %d: %d instances kept, want 1", i, len(free))
		}
		if first == nil {
			first = free[0].f
		} else if free[0].f != first {
			t.Fatalf("exec %d made a new instance", i)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the kept instance after Close: %v, want it closed", err)
	}
	ep, err := newExecPoll()
	if err != nil {
		t.Fatal(err)
	}
	s.polls.put(ep, true) // an exec that ends after Close
	if err := ep.f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("an instance put back after Close: %v, want it closed", err)
	}
}

// TestExecPollUnwatchBeforeReuse: a read end whose pipe ended, closed while a copy of it
// lives on (as in a fork in progress), is not reported to the instance's next user:
// collect takes it out before closing it. Without the removal the copy keeps the
// registration, and the hung-up pipe is reported under a stream's key.
func TestExecPollUnwatchBeforeReuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		unwatch bool
		want    int // events seen by the next user
	}{
		{name: "taken out", unwatch: true, want: 0},
		{name: "closed only", unwatch: false, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var polls execPolls
			defer polls.close()
			ep, err := polls.get()
			if err != nil {
				t.Fatal(err)
			}
			var exit, out, errp [2]int
			for _, p := range []*[2]int{&exit, &out, &errp} {
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
			}
			defer unix.Close(exit[0])
			if err := ep.watch(exit[0], [2]int{out[0], errp[0]}); err != nil {
				t.Fatal(err)
			}
			dup, err := unix.Dup(out[0]) // the fork's copy
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dup)
			for _, fd := range []int{exit[1], out[1], errp[1]} {
				unix.Close(fd) // every stream and the exit report
			}
			var evs [3]unix.EpollEvent
			if n, err := unix.EpollWait(ep.fd, evs[:], 1000); err != nil || n != 3 {
				t.Fatalf("epoll_wait: %d events, %v; want 3", n, err)
			}
			if tt.unwatch && (!ep.unwatch(out[0]) || !ep.unwatch(errp[0])) {
				t.Fatal("unwatch failed")
			}
			unix.Close(out[0])
			unix.Close(errp[0])
			polls.put(ep, true)
			next, err := polls.get()
			if err != nil || next.f != ep.f {
				t.Fatalf("get: %v, reused %v", err, next.f == ep.f)
			}
			defer polls.put(next, false)
			n, err := unix.EpollWait(next.fd, evs[:], 0)
			if err != nil {
				t.Fatal(err)
			}
			// The exit fd (watched once) and errp's read end (taken out, or without a copy
			// gone with its close) are never reported again.
			if n != tt.want {
				t.Fatalf("the next user sees %d events (%+v), want %d", n, evs[:n], tt.want)
			}
		})
	}
}
