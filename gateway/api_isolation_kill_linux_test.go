package gateway

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIsolationKillAll: the server's pid does not exist inside a sandbox, and
// `kill -9 -1` there ends the sandbox's own processes only: the server answers, another sandbox's running process is alive (through the
// API and on the host), and the sandbox itself still runs commands afterwards.
func TestIsolationKillAll(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-kill")
	other := newIsoBox(t, ts, "iso-bystander")
	victim := b.start("exec sleep 1000")
	bystander := other.start("exec sleep 1000")
	host := other.hostPID(bystander.PID)
	if host <= 0 {
		t.Fatalf("no host process for the other sandbox's pid %d", bystander.PID)
	}
	start := procStart(host)

	// The server's pid means nothing inside (signal 0 only asks whether it exists).
	server := strconv.Itoa(os.Getpid())
	if res := b.exec("kill -0 " + server); res.ExitCode == 0 || !strings.Contains(res.Stderr, "No such process") {
		t.Fatalf("the server's pid %s from inside: %+v; want no such process", server, res)
	}

	res := b.exec("kill -9 -1; echo survived")
	if !strings.Contains(res.Stdout, "survived") {
		t.Fatalf("kill -9 -1 inside: %+v", res) // kill -1 spares its caller
	}
	if p := b.process(victim.ID, 20*time.Second); p.Status != "exited" || p.Signal == nil || *p.Signal != "SIGKILL" {
		t.Fatalf("the sandbox's own process after kill -9 -1: status %s, signal %v; want it killed by SIGKILL", p.Status, p.Signal)
	}
	ts.must(http.StatusOK, "GET", "/healthz", nil)
	if p := other.process(bystander.ID, 0); p.Status != "running" {
		t.Fatalf("the other sandbox's process after kill -9 -1 in a sandbox: %+v", p)
	}
	if procStart(host) != start || syscall.Kill(host, 0) != nil {
		t.Fatalf("the other sandbox's process (host pid %d) died", host)
	}
	if procStart(b.init) == "" {
		t.Fatalf("the sandbox's init (host pid %d) died", b.init)
	}
	if got := b.sh("echo still here"); got != "still here\n" {
		t.Fatalf("exec after kill -9 -1: %q", got)
	}
	newIsoBox(t, ts, "iso-after") // the server still makes sandboxes
}

// TestIsolationSetsid: a daemon that left its process's group and session with setsid
// dies with its process (DELETE .../processes/{id}) and with its sandbox (DELETE
// /v1/sandboxes/{sb}).
func TestIsolationSetsid(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	for _, tc := range []struct {
		name   string
		delete func(b *isoBox, p processJSON) string
	}{
		{"delete process", func(b *isoBox, p processJSON) string {
			return "/v1/sandboxes/" + b.id + "/processes/" + p.ID
		}},
		{"delete sandbox", func(b *isoBox, _ processJSON) string { return "/v1/sandboxes/" + b.id }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newIsoBox(t, ts, "iso-setsid")
			p := b.start("setsid sleep 1000 & echo $! > daemon; exec sleep 1000")
			var inner int
			eventually(t, 20*time.Second, "the daemon's pid", func() bool {
				r := ts.do("GET", "/v1/sandboxes/"+b.id+"/files?path=daemon", nil)
				var err error
				inner, err = strconv.Atoi(strings.TrimSpace(string(r.body)))
				return r.status == http.StatusOK && err == nil
			})
			var host int
			eventually(t, 20*time.Second, "the daemon to run sleep in a session of its own", func() bool {
				host = b.hostPID(inner)
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(host) + "/cmdline")
				return host > 0 && string(cmd) == "sleep\x001000\x00"
			})
			sid, err := unix.Getsid(host)
			if err != nil || sid != host {
				t.Fatalf("the daemon (host pid %d) is not a session leader: sid %d, %v", host, sid, err)
			}
			start := procStart(host)
			ts.must(http.StatusNoContent, "DELETE", tc.delete(b, p), nil)
			awaitGone(t, host, start, "the setsid daemon")
		})
	}
}

// TestIsolationWorkspaceSwap: the symlink swap that made the files API serve the
// host's files (`cd .. && mv <ws> x && ln -s / <ws>`) cannot be done from inside a
// sandbox: the workspace's parent is the read-only root, and the workspace a mount
// point. The files API keeps serving the sandbox's own files.
func TestIsolationWorkspaceSwap(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-swap")
	files := "/v1/sandboxes/" + b.id + "/files"
	ts.must(http.StatusNoContent, "PUT", files+"?path=mine", "mine")
	ws := ts.guestWorkspace(b.id)
	if got := strings.TrimSpace(b.sh("pwd")); got != ws {
		t.Fatalf("pwd %q; the workspace is %q", got, ws)
	}
	for _, tc := range []struct{ name, command string }{
		{"rename and link", "cd .. && mv " + ws + " x && ln -s / " + ws},
		{"rename away", "mv " + ws + " " + ws + ".moved"},
		{"link beside", "ln -s / " + ws + ".link"},
		{"link inside", "ln -s / " + ws + "/../workspace2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.exec(tc.command)
			if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") && !strings.Contains(res.Stderr, "busy") {
				t.Fatalf("%q in the sandbox: %+v; want EROFS or EBUSY", tc.command, res)
			}
		})
	}
	st, err := os.Lstat(ts.hostWorkspace(b.id))
	if err != nil || !st.IsDir() {
		t.Fatalf("the workspace on the host: %v, %v; want its directory", st, err)
	}
	if r := ts.must(http.StatusOK, "GET", files+"?path=mine", nil); string(r.body) != "mine" {
		t.Fatalf("the sandbox's file after the swap attempts: %q", r.body)
	}
	if r := ts.do("GET", files+"?path=etc/passwd", nil); r.status != http.StatusNotFound {
		t.Fatalf("etc/passwd in the workspace: %d %s; want 404", r.status, r.body)
	}
	ts.must(http.StatusNoContent, "PUT", files+"?path=after", "after")
	if got := b.sh("cat " + ws + "/mine " + ws + "/after"); got != "mineafter" {
		t.Fatalf("the files inside after the swap attempts: %q", got)
	}
}
