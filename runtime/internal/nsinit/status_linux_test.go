package nsinit

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStatusPipe: with SpawnRequest.Status the init writes the status to the pipe
// before the exit frame, as Wait reports it; a pipe whose process outlived its init
// ends without one.
func TestStatusPipe(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	spawn := func(in *Init, cmd string) (*Child, *os.File) {
		t.Helper()
		r, w := mustPipe(t)
		ch, err := in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"/bin/sh", "-c", cmd}, Status: w})
		w.Close()
		if err != nil {
			r.Close()
			t.Fatal(err)
		}
		return ch, r
	}
	for _, tt := range []struct {
		name string
		cmd  string
		want ExitStatus
	}{
		{"code", "exit 7", ExitStatus{Code: 7}},
		{"signal", "kill -KILL $$", ExitStatus{Code: -1, Signal: unix.SIGKILL}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch, r := spawn(in, tt.cmd)
			defer r.Close()
			if !pollIn(t, int(r.Fd()), testTimeout) {
				t.Fatal("status pipe not readable")
			}
			st, ok, err := ReadStatus(int(r.Fd()))
			if err != nil || !ok || st != tt.want {
				t.Fatalf("ReadStatus = %+v, %v, %v; want %+v", st, ok, err, tt.want)
			}
			if got, err := ch.Wait(testCtx(t)); err != nil || got != st {
				t.Fatalf("Wait = %+v, %v; want the pipe's %+v", got, err, st)
			}
		})
	}
	other := startInit(t, Config{})
	ch, r := spawn(other, "sleep 1000")
	defer r.Close()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if !pollIn(t, int(r.Fd()), testTimeout) {
		t.Fatal("status pipe not readable after Close")
	}
	if st, ok, err := ReadStatus(int(r.Fd())); ok || err != nil {
		t.Fatalf("after Close: ReadStatus = %+v, %v, %v; want none", st, ok, err)
	}
	if _, err := ch.Wait(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v, want ErrClosed", err)
	}
}

// TestNoWait: a NoWait spawn returns before the init answers and gets no started
// frame; its exit comes through the status pipe only (no exit frame: Wait returns what
// Finish was given), and a start that fails ends the Child with ErrNotStarted and its
// cause.
func TestNoWait(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	spawn := func(argv ...string) (*Child, *os.File) {
		t.Helper()
		r, w := mustPipe(t)
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: argv, Status: w, NoWait: true})
		w.Close()
		if err != nil {
			r.Close()
			t.Fatal(err)
		}
		return ch, r
	}
	ch, r := spawn("/bin/sh", "-c", "exit 5")
	defer r.Close()
	if ch.PID() != 0 {
		t.Errorf("NoWait child has pid %d before any answer could come", ch.PID())
	}
	if !pollIn(t, int(r.Fd()), testTimeout) {
		t.Fatal("status pipe not readable")
	}
	st, ok, err := ReadStatus(int(r.Fd()))
	if err != nil || !ok || st.Code != 5 {
		t.Fatalf("ReadStatus = %+v, %v, %v; want code 5", st, ok, err)
	}
	// The init wrote the status and, in the same step under its lock, would have sent
	// an exit frame; a waited spawn's started frame comes after it on the socket, and
	// the reader handles frames in order: once that spawn returns, an exit frame
	// would have ended ch.
	other, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.Done():
		t.Fatal("a NoWait child was ended by an exit frame, want its status pipe only")
	default:
	}
	ch.Finish(st)
	if got, err := ch.Wait(ctx); err != nil || got != st {
		t.Fatalf("Wait after Finish = %+v, %v; want %+v", got, err, st)
	}
	if _, err := other.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	in.mu.Lock()
	_, kept := in.children[ch.id]
	in.mu.Unlock()
	if kept {
		t.Fatal("the Init still holds a finished NoWait child")
	}

	ch, r = spawn("no-such-program-here")
	defer r.Close()
	if !pollIn(t, int(r.Fd()), testTimeout) {
		t.Fatal("status pipe of a failed start not hung up")
	}
	if _, ok, err := ReadStatus(int(r.Fd())); ok || err != nil {
		t.Fatalf("ReadStatus of a failed start: %v, %v; want none", ok, err)
	}
	if _, err := ch.Wait(ctx); !errors.Is(err, ErrNotStarted) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Wait of a failed start: %v, want ErrNotStarted and ENOENT", err)
	}
	if _, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}, NoWait: true}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("NoWait without Status: %v, want ErrInvalidRequest", err)
	}
}
