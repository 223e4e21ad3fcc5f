package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// TestExecHoldsChildEndsUntilExit: the parent keeps its copies of the command's
// stdout and stderr until the exit is seen, so a command that closes its streams
// before it exits does not make them hang up early (which woke the exec once for the
// hang-ups and again for the exit); once the exit is seen the ends are closed and the
// exec returns as before, with no fd of the pipes left open.
func TestExecHoldsChildEndsUntilExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		new  func(testing.TB) *Sandbox
	}{
		{"local", func(tb testing.TB) *Sandbox { return newTestSandbox(tb, &Config{Driver: LocalDriver{}}) }},
		{"namespace", func(tb testing.TB) *Sandbox { return newNSSandbox(tb, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.new(t)
			ino, release := filepath.Join(s.Dir(), "ino"), filepath.Join(s.Dir(), "go")
			for _, f := range []string{ino, release} {
				if err := unix.Mkfifo(f, 0o666); err != nil {
					t.Fatal(err)
				}
			}
			type outcome struct {
				res ExecResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				// Keeps stdout as fd 3, closes 1 and 2, names the pipe on the fifo and
				// waits to be released.
				res, err := s.Exec(testCtx(t), ExecOptions{Command: "exec 3>&1 >&- 2>&-; " +
					"i=$(readlink /proc/self/fd/3); exec 3>&-; echo \"$i\" > ino; read x < go"})
				done <- outcome{res, err}
			}()
			named := make(chan string, 1)
			go func() {
				b, _ := os.ReadFile(ino) // until the command has written and closed it
				named <- strings.TrimSpace(string(b))
			}()
			var pipe string
			select {
			case pipe = <-named:
			case o := <-done:
				t.Fatalf("exec returned before it named its pipe: %+v %v", o.res, o.err)
			case <-time.After(bound):
				t.Fatal("the command never named its pipe")
			}
			if !strings.HasPrefix(pipe, "pipe:[") {
				t.Fatalf("stdout is %q, not a pipe", pipe)
			}
			if n := writeEnds(t, pipe); n != 1 {
				t.Fatalf("the command closed its stdout and runs on; this process holds %d write ends of it, want 1", n)
			}
			w, err := os.OpenFile(release, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.WriteString("\n")
			_ = w.Close()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(bound):
				t.Fatal("exec did not return after the command was released")
			}
			if o.err != nil || o.res.ExitCode != 0 || len(o.res.Stdout) != 0 || len(o.res.Stderr) != 0 {
				t.Fatalf("exec = %+v, %v; want exit 0 and no output", o.res, o.err)
			}
			if n := pipeFDs(t, pipe); n != 0 {
				t.Errorf("%d fds of the pipe still open after exec returned", n)
			}
		})
	}
}

// pipeFDs counts this process's fds open on pipe (as /proc names it, "pipe:[N]").
func pipeFDs(tb testing.TB, pipe string) int {
	tb.Helper()
	n := 0
	forPipeFDs(tb, pipe, func(string) { n++ })
	return n
}

// writeEnds counts this process's fds open for writing on pipe.
func writeEnds(tb testing.TB, pipe string) int {
	tb.Helper()
	n := 0
	forPipeFDs(tb, pipe, func(fd string) {
		b, err := os.ReadFile("/proc/self/fdinfo/" + fd)
		if err != nil {
			return // closed meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				if fl, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64); err == nil && fl&unix.O_ACCMODE == unix.O_WRONLY {
					n++
				}
			}
		}
	})
	return n
}

func forPipeFDs(tb testing.TB, pipe string, f func(fd string)) {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == pipe {
			f(e.Name())
		}
	}
}
