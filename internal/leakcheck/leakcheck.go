// Package leakcheck finds goroutines, file descriptors and child processes that a test
// left behind. It is imported by tests only.
//
// # Use
//
// Call [Main] from a package's TestMain to check the whole package once its tests end,
// and [Check] at the top of a non-parallel test to check that one test.
//
// # Caveats
//
// [Main] makes the test binary a child subreaper (PR_SET_CHILD_SUBREAPER), so a
// grandchild orphaned by a test is re-parented to the test binary and found; orphans that
// already exited are reaped silently, as they leak nothing.
package leakcheck

import (
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// settle is how long a check waits for stragglers (goroutines unwinding, processes being
// reaped) before it reports a leak. It is generous because CI machines are loaded.
const settle = 10 * time.Second

// Main runs the package's tests and then fails the run if goroutines, file descriptors
// or live child processes remain. It never returns.
func Main(m *testing.M) {
	becomeSubreaper()
	fds := openFDs()
	code := m.Run()
	if code == 0 && !testing.Short() {
		if msg := waitClean(fds, nil); msg != "" {
			fmt.Fprintln(os.Stderr, "leakcheck: "+msg)
			code = 1
		}
	}
	os.Exit(code)
}

// Check snapshots the process and registers a cleanup that fails tb if, once the test
// ends, it left goroutines, file descriptors or live child processes. It must not be used
// in a parallel test: other tests' resources would be counted too.
func Check(tb testing.TB) {
	tb.Helper()
	fds := openFDs()
	base := goroutineSet()
	tb.Cleanup(func() {
		if msg := waitClean(fds, base); msg != "" {
			tb.Error("leakcheck: " + msg)
		}
	})
}

// extraChecks are the checks Also added; Main runs them with its own.
var extraChecks []func() string

// Also adds check to what Main looks for once the package's tests end, for resources
// only the package knows (mounts, loop devices): check returns "" when nothing leaked,
// or what did. Call it from TestMain before Main; it is not safe for concurrent use.
func Also(check func() string) { extraChecks = append(extraChecks, check) }

func waitClean(baseFDs map[string]string, baseG map[string]bool) string {
	deadline := time.Now().Add(settle)
	for {
		reapOrphanZombies()
		msg := leaks(baseFDs, baseG)
		if msg == "" || time.Now().After(deadline) {
			return msg
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leaks(baseFDs map[string]string, baseG map[string]bool) string {
	var out []string
	if gs := extraGoroutines(baseG); len(gs) > 0 {
		out = append(out, fmt.Sprintf("%d leaked goroutines:\n%s", len(gs), strings.Join(gs, "\n\n")))
	}
	now := openFDs()
	var extra []string
	for fd, target := range now {
		if netpollerFDs[target] {
			continue
		}
		if old, ok := baseFDs[fd]; !ok || old != target {
			extra = append(extra, fd+" -> "+target)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		out = append(out, fmt.Sprintf("%d leaked fds: %s", len(extra), strings.Join(extra, ", ")))
	}
	if kids := liveChildren(); len(kids) > 0 {
		out = append(out, "live child processes: "+strings.Join(kids, "; "))
	}
	if baseG == nil { // Main, not Check: the package's own checks too
		for _, check := range extraChecks {
			if msg := check(); msg != "" {
				out = append(out, msg)
			}
		}
	}
	return strings.Join(out, "\n")
}

// netpollerFDs are the Go runtime's network poller (an epoll instance and its wakeup
// eventfd), opened on the first network use and kept for the life of the process.
var netpollerFDs = map[string]bool{
	"anon_inode:[eventpoll]": true,
	"anon_inode:[eventfd]":   true,
}

// ignoredFrames are goroutines that belong to the Go runtime, the testing package or
// long-lived library singletons rather than to any test.
var ignoredFrames = []string{
	"testing.(*M).",
	"testing.tRunner",
	"testing.(*T).Run",
	"testing.runFuzzing",
	"os/signal.signal_recv",
	"os/signal.loop",
	"runtime.ensureSigM",
	"runtime.goexit0",
	"internal/leakcheck.goroutines(", // the goroutine taking the snapshot
	"created by runtime.gc",
	"runtime.forcegchelper",
	"runtime.bgsweep",
	"runtime.bgscavenge",
	"runtime.runfinq",
	"go.opencensus.io",
	"nsinit.forkerLoop", // the thread sandbox inits are forked from lives as long as the process
	// A wait on a raft future that raft left unanswered when it shut down (see
	// cluster's Node.futureError): it cannot be ended and holds nothing else.
	"cluster.(*Node).futureError.func1",
}

func goroutineSet() map[string]bool {
	set := map[string]bool{}
	for _, g := range goroutines() {
		set[goroutineID(g)] = true
	}
	return set
}

func extraGoroutines(base map[string]bool) []string {
	var out []string
	for _, g := range goroutines() {
		if base != nil && base[goroutineID(g)] {
			continue
		}
		if ignorable(g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func ignorable(g string) bool {
	lines := strings.Split(g, "\n")
	if len(lines) < 2 {
		return true
	}
	body := strings.Join(lines[1:], "\n")
	for _, f := range ignoredFrames {
		if strings.Contains(body, f) {
			return true
		}
	}
	return false
}

func goroutineID(g string) string {
	first, _, _ := strings.Cut(g, "\n")
	id, _, _ := strings.Cut(strings.TrimPrefix(first, "goroutine "), " ")
	return id
}

func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Split(strings.TrimSpace(string(buf)), "\n\n")
}

func openFDs() map[string]string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the fd ReadDir itself used, now closed
		}
		out[e.Name()] = target
	}
	return out
}

// children lists the direct children of this process as pid → state letter and name.
func children() map[int]string {
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	out := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if ppid != self {
			continue
		}
		name := s[strings.IndexByte(s, '(')+1 : end]
		out[pid] = fields[0] + " " + name
	}
	return out
}

func liveChildren() []string {
	var out []string
	for pid, desc := range children() {
		if !strings.HasPrefix(desc, "Z ") {
			out = append(out, fmt.Sprintf("pid %d (%s)", pid, desc[2:]))
		}
	}
	sort.Strings(out)
	return out
}

// reapOrphanZombies reaps exited children that no os/exec.Cmd waits for: orphans
// re-parented to us by the subreaper flag. A zombie is left alone for a while first, so
// a Cmd.Wait that is about to reap its own child keeps its exit status.
func reapOrphanZombies() {
	for pid, desc := range children() {
		if !strings.HasPrefix(desc, "Z ") {
			continue
		}
		if zombieAge(pid) < 2*time.Second {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

var zombieSeen = map[int]time.Time{}

func zombieAge(pid int) time.Duration {
	first, ok := zombieSeen[pid]
	if !ok {
		zombieSeen[pid] = time.Now()
		return 0
	}
	return time.Since(first)
}
