package nsinit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testTimeout bounds every wait of a test; the machine is loaded, so it is generous.
const testTimeout = 30 * time.Second

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// startInit starts an init (with a fresh workspace unless cfg has one), checks that it
// really has its own pid and mount namespaces, and closes it when the test ends. With
// NSINIT_TEST_USERNS=1 an init without UserNS gets DefaultIDRange, so the whole
// suite can be run in user namespaces; with NSINIT_TEST_FORK=1 every init spawns on
// the fallback path (Config.ForceFork), so the whole suite can be run against it.
func startInit(tb testing.TB, cfg Config) *Init {
	tb.Helper()
	if cfg.ID == "" {
		cfg.ID = "sb-test"
	}
	if cfg.Workspace == "" {
		cfg.Workspace = tb.TempDir()
	}
	if cfg.UserNS == nil && os.Getenv("NSINIT_TEST_USERNS") == "1" {
		cfg.UserNS = &DefaultIDRange // run every such test in a user namespace
	}
	if os.Getenv("NSINIT_TEST_FORK") == "1" {
		cfg.ForceFork = true
	}
	in, err := Start(testCtx(tb), cfg)
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := in.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	requireNamespaces(tb, in.PID())
	return in
}

// requireNamespaces fails the test unless pid has pid and mount namespaces other than
// ours: the isolation tests (kill -9 -1 among them) are only safe and meaningful then.
func requireNamespaces(tb testing.TB, pid int) {
	tb.Helper()
	for _, ns := range []string{"pid", "mnt"} {
		ours, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err1 != nil || err2 != nil || ours == theirs {
			tb.Fatalf("init %d has no %s namespace of its own (ours %q, its %q, %v, %v)", pid, ns, ours, theirs, err1, err2)
		}
	}
}

// result is what a process run by run printed and how it ended.
type result struct {
	stdout, stderr string
	status         ExitStatus
	child          *Child
}

// run spawns argv in the sandbox with pipes, feeds it stdin, and waits for it.
func run(tb testing.TB, in *Init, stdin string, argv ...string) result {
	tb.Helper()
	return runReq(tb, in, stdin, SpawnRequest{Argv: argv})
}

func runReq(tb testing.TB, in *Init, stdin string, req SpawnRequest) result {
	tb.Helper()
	ctx := testCtx(tb)
	ir, iw := mustPipe(tb)
	or, ow := mustPipe(tb)
	er, ew := mustPipe(tb)
	req.Stdin, req.Stdout, req.Stderr = ir, ow, ew
	var sr *os.File // with NoWait, the status pipe's read end
	if req.NoWait {
		sr, req.Status = mustPipe(tb)
		defer sr.Close()
	}
	ch, err := in.Spawn(ctx, req)
	for _, f := range []*os.File{ir, ow, ew, req.Status} {
		if f != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		for _, f := range []*os.File{iw, or, er} {
			_ = f.Close()
		}
		tb.Fatalf("Spawn %q: %v", req.Argv, err)
	}
	go func() {
		_, _ = io.WriteString(iw, stdin)
		_ = iw.Close()
	}()
	outc, errc := readAll(or), readAll(er)
	if sr != nil {
		// As the runtime's exec: the status from the pipe, handed to Finish.
		if st, ok, err := ReadStatus(int(sr.Fd())); err == nil && ok {
			ch.Finish(st)
		}
	}
	st, err := ch.Wait(ctx)
	if err != nil {
		tb.Fatalf("Wait %q: %v", req.Argv, err)
	}
	return result{stdout: <-outc, stderr: <-errc, status: st, child: ch}
}

func mustPipe(tb testing.TB) (*os.File, *os.File) {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	return r, w
}

// readAll reads r to EOF (or testTimeout) in the background and closes it.
func readAll(r *os.File) <-chan string {
	c := make(chan string, 1)
	_ = r.SetReadDeadline(time.Now().Add(testTimeout))
	go func() {
		b, _ := io.ReadAll(r)
		_ = r.Close()
		c <- string(b)
	}()
	return c
}

// nsOf returns the pid namespace of a host pid, e.g. "pid:[4026532290]".
func nsOf(tb testing.TB, pid int) string {
	tb.Helper()
	return nsOfKind(tb, pid, "pid")
}

// nsOfKind returns the namespace of a kind (pid, net, ...) of a host pid.
func nsOfKind(tb testing.TB, pid int, kind string) string {
	tb.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
	if err != nil {
		tb.Fatalf("read the pid namespace of %d: %v", pid, err)
	}
	return ns
}

// livePIDsIn lists the host pids of live (not zombie) processes in pid namespace ns.
func livePIDsIn(ns string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/pid"))
		if err != nil || link != ns {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the parenthesised command, which may hold spaces.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// waitNoneIn waits, bounded, until no live process is left in ns.
func waitNoneIn(tb testing.TB, ns string) {
	tb.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		left := livePIDsIn(ns)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("processes of the sandbox survived: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runHelper runs a helper mode of the test binary and returns its exit code.
//
// ls (run inside a sandbox): print the names in / and the content of /marker.
//
// client: start an init on $NSINIT_WS (in a user namespace if $NSINIT_USERNS is 1),
// spawn a setsid daemon in it, print "<init host pid> <pid namespace>" and block until
// killed.
//
// Others: see userNSHelper.
func runHelper(mode string) int {
	switch mode {
	case "client":
		ctx := context.Background()
		cfg := Config{ID: "sb-helper", Workspace: os.Getenv("NSINIT_WS")}
		if os.Getenv("NSINIT_USERNS") == "1" {
			cfg.UserNS = &DefaultIDRange
		}
		in, err := Start(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sh", "-c", "setsid sleep 1000 & sleep 1000"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", in.PID()))
		fmt.Printf("%d %s %d\n", in.PID(), ns, ch.HostPID())
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	case "ls":
		ents, err := os.ReadDir("/")
		marker, err2 := os.ReadFile("/marker")
		if err != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, err, err2)
			return 1
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		fmt.Printf("%s\n%s", strings.Join(names, " "), marker)
		return 0
	}
	if code, ok := userNSHelper(mode); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown helper", mode)
	return 2
}
