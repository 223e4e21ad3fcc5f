package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIsolationNoServerSecrets: nothing of the server's leaks into a sandbox: a
// command's open fds are its stdio only (and ls's own directory), a process's are
// 0, 1 and 2 on the host too, the server's environment (a marker variable set before
// it started) is in no process's environment, and no token appears in the init's
// environment or command line as the sandbox sees them. (The runtime gave isolated
// sandboxes the server's PATH and USER; it now gives them a default PATH.)
//
// Not parallel: t.Setenv changes the whole test process's environment.
func TestIsolationNoServerSecrets(t *testing.T) {
	raw := make([]byte, 8)
	_, _ = rand.Read(raw)
	const markerName = "SANDGATE_ISO_SERVER_MARKER"
	marker := "marker-" + hex.EncodeToString(raw)
	t.Setenv(markerName, marker)
	// Variables the runtime might pass on: their values are the server's too.
	t.Setenv("PATH", os.Getenv("PATH")+":/"+marker+"-path")
	t.Setenv("USER", marker+"-user")
	t.Setenv("LOGNAME", marker+"-logname")
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-secrets")
	secrets := []string{markerName, marker}
	for tok := range testTokens() {
		secrets = append(secrets, tok)
	}

	t.Run("fds", func(t *testing.T) {
		out := b.sh("ls -l /proc/self/fd")
		dirFD := regexp.MustCompile(`^/proc/\d+/fd$`)
		var fds []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] { // after "total 0"
			name, target, ok := strings.Cut(line, " -> ")
			f := strings.Fields(name)
			if !ok || len(f) == 0 {
				t.Fatalf("ls -l /proc/self/fd: %q", out)
			}
			fd := f[len(f)-1]
			if fd != "0" && fd != "1" && fd != "2" && !dirFD.MatchString(target) {
				t.Fatalf("fd %s -> %s is open in a sandbox command:\n%s", fd, target, out)
			}
			fds = append(fds, fd)
		}
		if len(fds) > 4 || !slices.Contains(fds, "0") || !slices.Contains(fds, "2") {
			t.Fatalf("fds of a sandbox command: %v; want 0, 1, 2 and ls's directory:\n%s", fds, out)
		}
		p := b.start("exec sleep 1000")
		host := b.hostPID(p.PID)
		if host <= 0 {
			t.Fatalf("no host process for the sandbox's pid %d", p.PID)
		}
		// The init resumes as soon as the child's execve has begun, before the kernel
		// closes the init's close-on-exec fds in it; nothing of the sandbox runs
		// before that exec ends, so the fds are read once the process is sleep.
		eventually(t, 10*time.Second, "the process to be sleep", func() bool {
			comm, err := os.ReadFile("/proc/" + strconv.Itoa(host) + "/comm")
			return err == nil && strings.TrimSpace(string(comm)) == "sleep"
		})
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(host) + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"0", "1", "2"}) {
			t.Fatalf("a sandbox process has fds %v open; want 0, 1 and 2", names)
		}
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(host) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(environ), s) {
				t.Fatalf("a sandbox process's environment has %q:\n%q", s, environ)
			}
		}
	})
	for _, tc := range []struct {
		name, command string
		denied        bool // "Permission denied" is an answer too
	}{
		{"exec env", "env", false},
		{"shell variables", "set", false},
		{"init cmdline", "cat /proc/1/cmdline", false},
		{"init environ", "cat /proc/1/environ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.exec(tc.command)
			out := res.Stdout
			switch {
			case tc.denied && res.ExitCode != 0 && strings.Contains(res.Stderr, "Permission denied"):
				t.Logf("%q: %s", tc.command, strings.TrimSpace(res.Stderr))
				// What it would show: the init's environment, read on the host.
				raw, err := os.ReadFile("/proc/" + strconv.Itoa(b.init) + "/environ")
				if err != nil {
					t.Fatal(err)
				}
				out = string(raw)
			case res.ExitCode != 0 || out == "":
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", tc.command, res.ExitCode, out, res.Stderr)
			}
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Fatalf("%q inside a sandbox shows %q:\n%s", tc.command, s, out)
				}
			}
		})
	}
}
