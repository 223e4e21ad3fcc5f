package nsinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pollIn polls fd for up to wait and reports whether it is readable (POLLIN, or
// POLLHUP: a pipe whose write end is closed).
func pollIn(tb testing.TB, fd int, wait time.Duration) bool {
	tb.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(wait/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		return n == 1 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
	}
}

// TestChildExitFD checks that ExitFD is the process's own pidfd, passed on by the init:
// not readable while the process runs, readable once it exited, with Exited agreeing;
// and that once the exit was reported it is still an fd that is readable at once.
func TestChildExitFD(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	ir, iw := mustPipe(t)
	defer iw.Close()
	ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sh", "-c", "read x"}, Stdin: ir})
	_ = ir.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := ch.ExitFD()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.Contains(link, "pidfd") {
		t.Fatalf("ExitFD is %q (%v), want a pidfd", link, err)
	}
	// Its pid, as the pidfd's fdinfo names it in our namespace, is the host pid.
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil || !strings.Contains(string(info), "Pid:\t"+strconv.Itoa(ch.HostPID())+"\n") {
		t.Fatalf("pidfd fdinfo %q (%v), want Pid %d", info, err, ch.HostPID())
	}
	if pollIn(t, fd, 0) || ch.Exited() {
		t.Fatal("ExitFD readable or Exited true while the process runs")
	}
	_ = iw.Close() // read gets EOF: the shell exits
	if !pollIn(t, fd, testTimeout) {
		t.Fatal("ExitFD not readable after the process exited")
	}
	if !ch.Exited() {
		t.Fatal("Exited false after the pidfd said so")
	}
	if st, err := ch.Wait(ctx); err != nil || st.Code != 1 {
		t.Fatalf("Wait: %v %v, want code 1 (read at EOF)", st, err)
	}
	after, err := ch.ExitFD()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(after)
	if !pollIn(t, after, testTimeout) {
		t.Fatal("ExitFD after the reported exit is not readable")
	}
}

// TestSpawnDevNull checks that spawns without stdio files get /dev/null, one the Init
// opened once for all of them (not one per spawn), and that a spawn after Close fails
// rather than open it again.
func TestSpawnDevNull(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	var nulls []int
	for i := 0; i < 2; i++ {
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sh", "-c", `[ "$(stat -L -c %t:%T /proc/$$/fd/0 /proc/$$/fd/1)" = "1:3
1:3" ]`}})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := ch.Wait(ctx); err != nil || st.Code != 0 { // 1:3 is /dev/null's device
			t.Fatalf("stdin and stdout are not /dev/null: %v %v", st, err)
		}
		in.mu.Lock()
		nulls = append(nulls, in.null)
		in.mu.Unlock()
	}
	if nulls[0] < 0 || nulls[0] != nulls[1] {
		t.Fatalf("the Init's /dev/null fds were %v, want one fd for both spawns", nulls)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Spawn after Close: %v, want ErrClosed", err)
	}
	if in.null != -1 {
		t.Fatalf("/dev/null fd %d still open after Close", in.null)
	}
}
