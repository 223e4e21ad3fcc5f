package runtime

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExitNotifiers: both ways of learning that a child exited signal only once it has,
// and leave it unreaped, so its pid stays reserved until the caller waits.
func TestExitNotifiers(t *testing.T) {
	t.Parallel()
	for name, notifier := range map[string]func(int) (int, error){"pidfd": exitNotifier, "waiter": waiterExitNotifier} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("cat")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			fd, err := notifier(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := pollRetry(fds, 50); err != nil || n != 0 {
				t.Fatalf("ready while the child runs: n=%d err=%v", n, err)
			}
			stdin.Close() // cat reads EOF and exits
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, err := unix.Poll(fds, 100)
				if err == nil && n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not ready 10s after the child was told to exit: n=%d err=%v", n, err)
				}
			}
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil {
				t.Fatalf("child already reaped: %v", err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("wait: %v", err)
			}
		})
	}
}

// pollRetry is poll(2) that retries when a signal (Go's preemption) interrupts it.
func pollRetry(fds []unix.PollFd, timeoutMS int) (int, error) {
	for {
		n, err := unix.Poll(fds, timeoutMS)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// TestCapBufferFirstRead: a stream's first read keeps only the bytes it got (no
// buffer for a stream that stays empty), and later reads append to them up to the
// limit.
func TestCapBufferFirstRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		limit  int
		want   string
		trunc  bool
	}{
		{"empty", nil, 1000, "", false},
		{"small", []string{"abc"}, 1000, "abc", false},
		{"two reads", []string{"abc", "defg"}, 1000, "abcdefg", false},
		{"first read over the limit", []string{"abcdef"}, 4, "abcd", true},
		{"second read over the limit", []string{"ab", "cdef"}, 4, "abcd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			defer unix.Close(p[0])
			c := capBuffer{limit: tt.limit}
			for _, w := range tt.writes {
				if _, err := unix.Write(p[1], []byte(w)); err != nil {
					t.Fatal(err)
				}
				if ended, _ := c.readFD(p[0]); ended {
					t.Fatal("ended before the write end closed")
				}
			}
			unix.Close(p[1])
			for ended := false; !ended; {
				ended, _ = c.readFD(p[0])
			}
			if string(c.buf) != tt.want || c.truncated != tt.trunc {
				t.Fatalf("got %q truncated %v, want %q truncated %v", c.buf, c.truncated, tt.want, tt.trunc)
			}
			if len(tt.writes) == 0 && cap(c.buf) != 0 {
				t.Fatalf("an empty stream has a buffer of %d bytes", cap(c.buf))
			}
			if len(tt.writes) == 1 && !tt.trunc && cap(c.buf) >= 512 {
				t.Fatalf("a %d-byte stream has a buffer of %d bytes", len(c.buf), cap(c.buf))
			}
		})
	}
}

// TestExecHammerStreams: concurrent execs in one sandbox each get their own output,
// status and exit code back. Each exec juggles three pipes and its exit fd (with the
// namespace driver, the status pipe lent to collect until reap closes it); an fd
// closed twice or read by the wrong call would cross or lose output here.
func TestExecHammerStreams(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	const workers, rounds = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				out, errOut, code := fmt.Sprintf("out-%d-%d", w, i), fmt.Sprintf("err-%d-%d", w, i), (w+i)%7
				res, err := s.Exec(ctx, ExecOptions{Argv: []string{"sh", "-c", `printf %s "$1"; printf %s "$2" >&2; exit "$3"`, "sh", out, errOut, strconv.Itoa(code)}})
				switch {
				case err != nil:
					errs <- err
				case string(res.Stdout) != out || string(res.Stderr) != errOut || res.ExitCode != code:
					errs <- fmt.Errorf("exec %d/%d: stdout %q stderr %q exit %d, want %q %q %d", w, i, res.Stdout, res.Stderr, res.ExitCode, out, errOut, code)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
