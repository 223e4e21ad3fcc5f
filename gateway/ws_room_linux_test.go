package gateway

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendRoom: whenever sendRoom reports room, a frame's write completes at once (the
// output goroutine must never wait on a client), and once a peer that reads nothing
// has let the socket fill, it reports none.
func TestSendRoom(t *testing.T) {
	t.Parallel()
	conn, _ := tcpPair(t) // the peer reads nothing
	raw, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const n = inlineMaxBytes + wsFrameHeaderMax
	frame := make([]byte, n)
	// writeNow writes frame without waiting: one write(2), whatever it takes.
	writeNow := func() (int, error) {
		var wrote int
		var werr error
		err := raw.Write(func(fd uintptr) bool {
			wrote, werr = unix.Write(int(fd), frame)
			return true
		})
		return wrote, errors.Join(err, werr)
	}
	// Bulk first, the way a pump fills a socket, then frame by frame.
	chunk := make([]byte, 64<<10)
	for {
		_ = conn.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = conn.SetWriteDeadline(time.Time{})
	frames := 0
	for sendRoom(conn, n) {
		if got, err := writeNow(); got != n {
			t.Fatalf("frame %d: sendRoom reported room, but write(2) took %d of %d bytes (%v)", frames, got, n, err)
		}
		if frames++; frames > 1<<16 {
			t.Fatalf("still room after %d frames to a peer that reads nothing", frames)
		}
	}
	if got, _ := writeNow(); got == n {
		// Not wrong (the estimate is conservative), but then it should be close.
		t.Logf("a frame still fitted after sendRoom reported none (%d frames written)", frames)
	}
}
