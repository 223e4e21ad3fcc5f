package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"
)

// The isolation tests (api_isolation_*_linux_test.go) drive a real gateway over HTTP
// and try, from inside a sandbox, what docs/design.md ("Sandbox isolation") says a
// sandbox cannot do. Their commands run as root on this machine, so each test first
// proves that its sandbox has pid and mount namespaces of its own (isoBox) and fails,
// never skips, when it has not: only then does it run anything destructive.

// isoBox is a sandbox of a test server whose processes run in namespaces of their own,
// checked by newIsoBox.
type isoBox struct {
	t    testing.TB
	ts   *testServer
	id   string
	init int // the host pid of the sandbox's init
}

// isoServer starts a test server on the namespace driver, whatever
// $SANDGATE_TEST_RUNTIME asks of the rest of the suite (these tests are about that
// driver), and fails the test if the driver cannot start here.
func isoServer(t testing.TB, opts *serverOptions) *testServer {
	t.Helper()
	o := serverOptions{}
	if opts != nil {
		o = *opts
	}
	config := o.config
	o.config = func(c *Config) {
		if config != nil {
			config(c)
		}
		c.Runtime = RuntimeNamespace
	}
	ts := newTestServer(t, &o)
	if !ts.isolated() {
		t.Fatalf("the isolation tests need the namespace runtime driver, but the server runs %q", ts.srv.driver.Name())
	}
	return ts
}

// isoID returns a sandbox id unique to this run, so that sandboxes of parallel tests
// (and of other test processes on the machine) never share an init's command line.
func isoID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// newIsoBox creates a sandbox, wakes its init with a command, and checks that the
// init (a child of this process whose command line names the sandbox) has pid and
// mount namespaces other than this process's.
func newIsoBox(t testing.TB, ts *testServer, prefix string) *isoBox {
	t.Helper()
	b := &isoBox{t: t, ts: ts, id: isoID(prefix)}
	ts.sandbox(b.id)
	b.sh("true")
	b.init = findInit(t, b.id)
	for _, ns := range []string{"pid", "mnt"} {
		own, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatalf("read this process's %s namespace: %v", ns, err)
		}
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(b.init) + "/ns/" + ns)
		if err != nil {
			t.Fatalf("read the %s namespace of sandbox %s's init (pid %d): %v", ns, b.id, b.init, err)
		}
		if own == theirs {
			t.Fatalf("sandbox %s shares this process's %s namespace (%s): refusing to run the isolation test", b.id, ns, own)
		}
	}
	return b
}

// findInit returns the host pid of sandbox id's init: the child of this process whose
// command line is "sandgate-init <id>".
func findInit(t testing.TB, id string) int {
	t.Helper()
	if pid := proctest.ChildByCmdline("/proc", os.Getpid(), "sandgate-init\x00"+id+"\x00"); pid > 0 {
		return pid
	}
	t.Fatalf("no init of sandbox %s (a process \"sandgate-init %s\" started by this one) is running", id, id)
	return -1
}

// procStatusField returns the first value of a field of /proc/<pid>/status, or "" if
// the process or the field is gone.
func procStatusField(pid int, field string) string {
	if fs := strings.Fields(proctest.StatusField("/proc", pid, field)); len(fs) > 0 {
		return fs[0]
	}
	return ""
}

// exec runs command with /bin/sh -c in the sandbox through the API.
func (b *isoBox) exec(command string) execJSON {
	b.t.Helper()
	var res execJSON
	b.ts.must(http.StatusOK, "POST", "/v1/sandboxes/"+b.id+"/exec", map[string]any{
		"command": command, "timeout_ms": 60000,
	}).json(b.t, &res)
	if res.TimedOut {
		b.t.Fatalf("%q in sandbox %s timed out: %+v", command, b.id, res)
	}
	return res
}

// sh runs command and returns its stdout, failing the test unless it exits 0.
func (b *isoBox) sh(command string) string {
	b.t.Helper()
	res := b.exec(command)
	if res.ExitCode != 0 {
		b.t.Fatalf("%q in sandbox %s: exit %d, stdout %q, stderr %q", command, b.id, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// start starts a background process running command through the API.
func (b *isoBox) start(command string) processJSON {
	b.t.Helper()
	var p processJSON
	b.ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+b.id+"/processes", map[string]any{"command": command}).json(b.t, &p)
	return p
}

// process returns a process through the API, waiting up to wait for it to exit.
func (b *isoBox) process(id string, wait time.Duration) processJSON {
	b.t.Helper()
	var p processJSON
	b.ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+b.id+"/processes/"+id+"?wait_ms="+strconv.FormatInt(wait.Milliseconds(), 10), nil).json(b.t, &p)
	return p
}

// hostPID returns the host pid of the process the sandbox knows as pid: the process
// in the init's pid namespace whose innermost NSpid is pid; -1 if none lives.
func (b *isoBox) hostPID(pid int) int {
	b.t.Helper()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(b.init) + "/ns/pid")
	if err != nil {
		b.t.Fatalf("the init of sandbox %s is gone: %v", b.id, err)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		host, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
				if ids := strings.Fields(f); len(ids) > 1 && ids[len(ids)-1] == strconv.Itoa(pid) {
					return host
				}
			}
		}
	}
	return -1
}

// cgroupFile returns the path of file in the sandbox's group of cgroup v1 controller
// ctl (the init's group, which every process it spawns inherits), failing the test if
// the init is in no such group.
func (b *isoBox) cgroupFile(ctl, file string) string {
	b.t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(b.init) + "/cgroup")
	if err != nil {
		b.t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !hasField(parts[1], ctl) {
			continue
		}
		mnt := cgroupV1Mount(b.t, ctl)
		if parts[2] == "/" {
			b.t.Fatalf("the init of sandbox %s is in the root %s group: no limit can apply", b.id, ctl)
		}
		return filepath.Join(mnt, parts[2], file)
	}
	b.t.Fatalf("the init of sandbox %s is in no %s cgroup v1 group: %s", b.id, ctl, raw)
	return ""
}

// cgroupV1Mount returns where this process's mount namespace has the v1 hierarchy of
// controller ctl.
func cgroupV1Mount(t testing.TB, ctl string) string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fs, opts := strings.Fields(pre), strings.Fields(post)
		if len(fs) >= 5 && len(opts) >= 3 && opts[0] == "cgroup" && hasField(opts[2], ctl) {
			return fs[4]
		}
	}
	t.Fatalf("the cgroup v1 %s controller is not mounted on this machine", ctl)
	return ""
}

// hasField reports whether the comma-separated list has the element f.
func hasField(list, f string) bool {
	for _, e := range strings.Split(list, ",") {
		if e == f {
			return true
		}
	}
	return false
}

// readInt reads a file holding one integer (a cgroup setting or counter).
func readInt(t testing.TB, path string) int64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// procStart returns a process's start time (field 22 of /proc/<pid>/stat), which tells
// it from a later process given the same pid; "" if it is gone or a zombie.
func procStart(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fs := strings.Fields(s[i+1:]) // fs[0] is field 3, the state
	if len(fs) < 20 || fs[0] == "Z" || fs[0] == "X" {
		return ""
	}
	return fs[19]
}

// awaitGone waits (bounded) until the host process pid that started at start is gone.
func awaitGone(t testing.TB, pid int, start, what string) {
	t.Helper()
	eventually(t, 20*time.Second, what+" (host pid "+strconv.Itoa(pid)+") to be gone", func() bool {
		return procStart(pid) != start
	})
}
