package nsinit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// bigEnv is an environment of n variables of size bytes each, V0 to V<n-1>.
func bigEnv(n, size int) []string {
	env := make([]string, n)
	for i := range env {
		env[i] = fmt.Sprintf("V%d=%s", i, strings.Repeat(string(rune('a'+i%26)), size))
	}
	return env
}

// newSpillPair returns the server's end (polled) and the init's end (blocking) of a
// control socketpair.
func newSpillPair(t *testing.T) (server, init *conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	server, err = newConn(fds[0], "server", serverRecvBuf)
	if err != nil {
		t.Fatal(err)
	}
	init = newBlockingConn(fds[1], initRecvBuf)
	t.Cleanup(func() { init.unmapSpill(); _ = server.Close(); _ = init.Close() })
	return server, init
}

// TestSpilledRequestRoundTrip sends a spawn frame far over maxFrame with two fds: the
// init's end gets the whole request and exactly the two fds, and drops the mapping at
// its next request.
func TestSpilledRequestRoundTrip(t *testing.T) {
	server, init := newSpillPair(t)
	r, w := mustPipe(t)
	defer r.Close()
	defer w.Close()
	want := frame{Op: opSpawn, ID: 7, Argv: []string{"sh", "-c", strings.Repeat("x", 100<<10)}, Env: bigEnv(8, 120<<10), Dir: "/workspace"}
	if err := server.send(&want, []int{int(r.Fd()), int(w.Fd())}, nil); err != nil {
		t.Fatal(err)
	}
	got, fds, err := init.recvReused()
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) != 2 {
		t.Fatalf("got %d fds, want the request's 2", len(fds))
	}
	closeFDs(fds)
	if got.Op != want.Op || got.ID != want.ID || got.Dir != want.Dir || len(got.Argv) != 3 || got.Argv[2] != want.Argv[2] || len(got.Env) != len(want.Env) {
		t.Fatalf("got op %q id %d dir %q, %d args, %d env", got.Op, got.ID, got.Dir, len(got.Argv), len(got.Env))
	}
	for i := range want.Env {
		if got.Env[i] != want.Env[i] {
			t.Fatalf("env[%d] differs", i)
		}
	}
	if init.spill == nil {
		t.Fatal("the spilled request is not mapped")
	}
	if err := server.send(&frame{Op: opSignal, ID: 8}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err := init.recvReused(); err != nil || got.Op != opSignal {
		t.Fatalf("next request: %v, %v", got, err)
	}
	if init.spill != nil {
		t.Error("the spilled request's mapping outlived the next request")
	}
}

// TestSpillUnsealedRefused checks that the init's end refuses a spill frame whose
// file could still change under its mapping, and closes everything that came with it.
func TestSpillUnsealedRefused(t *testing.T) {
	server, init := newSpillPair(t)
	mfd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeFrame(nil, &frame{Op: opSpawn, Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(mfd, b); err != nil {
		t.Fatal(err)
	}
	marker, err := encodeFrame(nil, &frame{Op: opSpill})
	if err != nil {
		t.Fatal(err)
	}
	server.wmu.Lock()
	err = server.sendEncoded(opSpill, marker, appendRights(nil, []int{mfd}))
	server.wmu.Unlock()
	_ = unix.Close(mfd)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := init.recvReused(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("unsealed spill: %v, want ErrProtocol", err)
	}
	if init.spill != nil {
		t.Error("an unsealed file was kept mapped")
	}
}

// TestSpawnBigEnvironment runs a command with a ~1 MiB environment and a 100 KiB
// argument through a real init: both reach the command whole.
func TestSpawnBigEnvironment(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	arg := strings.Repeat("y", 100<<10)
	res := runReq(t, in, "", SpawnRequest{
		Argv: []string{"sh", "-c", `printf '%s %s %s' "${#V0}" "${#V7}" "${#1}"`, "sh", arg},
		Env:  append(bigEnv(8, 120<<10), "PATH=/usr/bin:/bin"),
	})
	wantStdout(fmt.Sprintf("%d %d %d", 120<<10, 120<<10, 100<<10))(t, res)
	// The init still serves small requests after it.
	wantStdout("ok\n")(t, run(t, in, "", "echo", "ok"))
}
