package nsinit

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// newTestPair returns both ends of a control socketpair as conns.
func newTestPair(tb testing.TB) (*conn, *conn) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := newConn(fds[0], "a", serverRecvBuf)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := newConn(fds[1], "b", initRecvBuf)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// FuzzRecv feeds arbitrary datagrams to recv: it returns a frame or an ErrProtocol,
// never panics.
func FuzzRecv(f *testing.F) {
	for _, fr := range []frame{
		{Op: opSpawn, ID: 1, Argv: []string{"sh", "-c", "true"}, Env: []string{"A=b"}, Dir: "x", TTY: true},
		{Op: opSignal, ID: 2, Target: 1, Sig: 9},
		{Op: opExit, ID: 1, Code: -1, Signal: 9},
		{Op: opConfig, Config: &Config{ID: "a", Workspace: "/w"}},
	} {
		b, err := encodeFrame(nil, &fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{byte(len(ops))})
	f.Add([]byte{2, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > serverRecvBuf {
			return
		}
		a, b := newTestPair(t)
		if err := unix.Send(int(b.f.Fd()), data, 0); err != nil {
			t.Skip(err)
		}
		fr, fds, _, err := a.recv()
		closeFDs(fds)
		if err != nil && !errors.Is(err, ErrProtocol) {
			t.Fatalf("recv = %v, want a frame or ErrProtocol", err)
		}
		if err == nil && fr == nil {
			t.Fatal("recv returned neither a frame nor an error")
		}
	})
}

// TestRoundTrip sends frames with fds and credentials both ways.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := newTestPair(t)
	if err := unix.SetsockoptInt(int(a.f.Fd()), unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		t.Fatal(err)
	}
	r, w := mustPipe(t)
	defer r.Close()
	defer w.Close()
	want := frame{Op: opSpawn, ID: 3, Argv: []string{"a", "b"}}
	if err := b.send(&want, []int{int(w.Fd())}, &unix.Ucred{Pid: int32(unix.Getpid())}); err != nil {
		t.Fatal(err)
	}
	got, fds, cred, err := a.recv()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFDs(fds)
	if got.Op != want.Op || got.ID != want.ID || len(got.Argv) != 2 || len(fds) != 1 || cred == nil || int(cred.Pid) != unix.Getpid() {
		t.Fatalf("got %+v, fds %v, cred %+v", got, fds, cred)
	}
	if err := b.send(&frame{Op: opSpawn, Env: []string{string(make([]byte, maxSpill))}}, nil, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame: %v, want ErrFrameTooLarge", err)
	}
	// A frame over maxFrame is spilled, which the server's end refuses.
	if err := b.send(&frame{Op: opSpawn, Env: []string{string(make([]byte, maxFrame))}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.recv(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a spilled frame on the server's end: %v, want ErrProtocol", err)
	}
}
