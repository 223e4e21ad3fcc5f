package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIsolationProcesses: ps and /proc inside a sandbox show only the sandbox's own
// processes (a handful, where the host has many), and the pid the API reports for a
// process is its pid inside: what its shell prints as $$, and what ps shows.
func TestIsolationProcesses(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-ps")
	p := b.start("echo $$ > pid; exec sleep 1000")
	var self string
	eventually(t, 20*time.Second, "the process to write its pid", func() bool {
		r := ts.do("GET", "/v1/sandboxes/"+b.id+"/files?path=pid", nil)
		self = strings.TrimSpace(string(r.body))
		return r.status == http.StatusOK && self != ""
	})
	if self != strconv.Itoa(p.PID) {
		t.Fatalf("the process's $$ is %s; the API says pid %d", self, p.PID)
	}
	if host := b.hostPID(p.PID); host <= 0 {
		t.Fatalf("no process of the sandbox's pid namespace has pid %d there", p.PID)
	} else if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(host) + "/cmdline"); string(cmd) != "sleep\x001000\x00" {
		t.Fatalf("host pid %d of the sandbox's pid %d runs %q; want sleep 1000", host, p.PID, cmd)
	}

	hostProcs := numericEntries(t, "/proc")
	if len(hostProcs) < 20 {
		t.Fatalf("the host shows only %d processes: too few to tell a sandbox's view from it", len(hostProcs))
	}
	inside := strings.Fields(b.sh("ls /proc | grep -E '^[0-9]+$'"))
	// 1 (the init), the sleep, and the sh, ls and grep of this command.
	if len(inside) > 5 || !slices.Contains(inside, "1") || !slices.Contains(inside, strconv.Itoa(p.PID)) {
		t.Fatalf("/proc inside lists pids %v; want only the init (1), the process (%d) and this command's (the host has %d)", inside, p.PID, len(hostProcs))
	}
	ps := strings.Split(strings.TrimSpace(b.sh("ps -eo pid=,args=")), "\n")
	if len(ps) > 4 {
		t.Fatalf("ps inside shows %d processes; want the init, the sleep, sh and ps:\n%s", len(ps), strings.Join(ps, "\n"))
	}
	found := false
	for _, line := range ps {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == strconv.Itoa(p.PID) && strings.Join(f[1:], " ") == "sleep 1000" {
			found = true
		}
	}
	if !found {
		t.Fatalf("ps inside does not show pid %d as sleep 1000:\n%s", p.PID, strings.Join(ps, "\n"))
	}
}

// numericEntries returns the names of dir's entries that are numbers (pids).
func numericEntries(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestIsolationReadOnlyRoot: a sandbox cannot write to /etc, /usr or / (EROFS or
// EACCES), but can to /workspace; it is root inside (id -u is 0) and an unprivileged
// uid to the host (a user namespace).
func TestIsolationReadOnlyRoot(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-ro")
	for _, tc := range []struct{ name, command string }{
		{"etc new file", "echo x > /etc/sandgate-iso"},
		{"etc existing file", "echo x >> /etc/hostname"},
		{"usr", "echo x > /usr/sandgate-iso"},
		{"usr bin", "cp /usr/bin/true /usr/bin/sandgate-iso"},
		{"root file", "echo x > /sandgate-iso"},
		{"root dir", "mkdir /sandgate-iso"},
		{"root rename", "mv /etc /etc2"},
		{"chmod", "chmod 777 /usr/bin/env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.exec(tc.command)
			if res.ExitCode == 0 {
				t.Fatalf("%q succeeded in the sandbox", tc.command)
			}
			if !strings.Contains(res.Stderr, "Read-only file system") && !strings.Contains(res.Stderr, "Permission denied") &&
				!strings.Contains(res.Stderr, "Operation not permitted") {
				t.Fatalf("%q: exit %d, stderr %q; want EROFS, EACCES or EPERM", tc.command, res.ExitCode, res.Stderr)
			}
		})
	}
	for _, dir := range []string{"/", "/etc", "/usr"} {
		if _, err := os.Stat(filepath.Join(dir, "sandgate-iso")); err == nil {
			t.Fatalf("%s/sandgate-iso exists on the host", dir)
		}
	}
	if got := b.sh("echo hello > /workspace/f && cat /workspace/f && echo x > /tmp/t && cat /tmp/t"); got != "hello\nx\n" {
		t.Fatalf("writing to /workspace and /tmp: %q", got)
	}
	if got := strings.TrimSpace(b.sh("id -u")); got != "0" {
		t.Fatalf("id -u inside is %q; want 0", got)
	}
	p := b.start("exec sleep 1000")
	host := b.hostPID(p.PID)
	if host <= 0 {
		t.Fatalf("no host process for the sandbox's pid %d", p.PID)
	}
	if uid := procStatusField(host, "Uid"); uid == "" || uid == "0" {
		t.Fatalf("the sandbox's root is host uid %q; want an unprivileged one (a user namespace)", uid)
	}
}

// TestIsolationHostPaths: another sandbox's workspace, the server's data directory, a
// token file in it and actors.db do not exist inside a sandbox, by their host paths or
// by walking up from the workspace, and / holds only the sandbox root's entries.
func TestIsolationHostPaths(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	data := ts.srv.cfg.DataDir
	token := filepath.Join(data, "token")
	if err := os.WriteFile(token, []byte(testAdminToken), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newIsoBox(t, ts, "iso-paths")
	other := newIsoBox(t, ts, "iso-other")
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/"+other.id+"/files?path=secret", "other's secret")
	db := filepath.Join(data, "actors.db")
	for _, p := range []string{db, token, filepath.Join(ts.hostWorkspace(other.id), "secret")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the host path to try must exist: %v", err)
		}
	}
	otherWS := ts.hostWorkspace(other.id)
	for _, tc := range []struct{ name, path string }{
		{"data dir", data},
		{"actors.db", db},
		{"token", token},
		{"workspaces dir", filepath.Join(data, "workspaces")},
		{"other workspace", otherWS},
		{"other file", filepath.Join(otherWS, "secret")},
		{"own host path", ts.hostWorkspace(b.id)},
		{"other file relative", "../" + other.id + "/secret"},
		{"other workspace from guest", "/workspace/../" + other.id},
		{"actors.db relative", "../../actors.db"},
		{"token relative", "../../token"},
		{"actors.db through proc root", "/proc/1/root" + db},
		{"other through proc cwd", "/proc/1/cwd/../" + other.id},
		{"host home", "/root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.exec("ls -d '" + tc.path + "' || exit 7; cat '" + tc.path + "'")
			if res.ExitCode != 7 {
				t.Fatalf("%s is reachable in the sandbox: exit %d, stdout %q, stderr %q", tc.path, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
	got := strings.Fields(b.sh("ls -A /"))
	want := map[string]bool{"bin": true, "dev": true, "etc": true, "lib": true, "lib32": true, "lib64": true, "libx32": true,
		"opt": true, "proc": true, "sbin": true, "tmp": true, "usr": true, "workspace": true}
	for _, name := range got {
		if !want[name] {
			t.Fatalf("/ inside has %q: %v; want only the sandbox root's entries", name, got)
		}
	}
	if !slices.Contains(got, "workspace") || !slices.Contains(got, "usr") {
		t.Fatalf("/ inside is %v; want usr and workspace among its entries", got)
	}
	if got := b.sh("grep -rl 'other.s secret' /tmp /workspace /dev/shm 2>/dev/null; true"); got != "" {
		t.Fatalf("the other sandbox's file is found inside: %q", got)
	}
}

// TestIsolationPrivileges: a sandbox's processes have no capabilities, no_new_privs
// and a seccomp filter, so root inside cannot mount, unshare or reboot; the sandbox
// has its own host name (its id) and HOME is its workspace.
func TestIsolationPrivileges(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-privs")
	status := map[string]string{}
	for _, line := range strings.Split(b.sh("cat /proc/self/status"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	for k, want := range map[string]string{
		"NoNewPrivs": "1", "Seccomp": "2",
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
	} {
		if status[k] != want {
			t.Errorf("%s of a sandbox process is %q; want %q", k, status[k], want)
		}
	}
	for _, tc := range []struct {
		name, command string
		want          int // the exit status; 0: any failure of the call itself
	}{
		{"mount", "mount -t tmpfs none /tmp", 0},
		{"unshare", "unshare -Ur true", 0},
		{"hostname", "hostname evil", 0},
		// LINUX_REBOOT_CMD_CAD_OFF, harmless anywhere: exit 3 if refused with EPERM
		// (EINVAL would mean the call got as far as looking at its argument).
		{"reboot", `python3 -c 'import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); sys.exit(3 if l.reboot(0) != 0 and ctypes.get_errno() == 1 else 0)'`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.exec(tc.command)
			switch {
			case tc.want != 0 && res.ExitCode != tc.want,
				tc.want == 0 && (res.ExitCode == 0 || res.ExitCode == 127 || res.Stderr == ""):
				t.Fatalf("%q in the sandbox: %+v; want it refused", tc.command, res)
			}
		})
	}
	if got := b.sh("hostname; echo $HOME"); got != b.id+"\n"+ts.guestWorkspace(b.id)+"\n" {
		t.Fatalf("hostname and HOME inside: %q; want %s and %s", got, b.id, ts.guestWorkspace(b.id))
	}
}

// TestIsolationEveryEntryPoint: exec, a session's commands, a background process and a
// terminal's shell all run in the namespaces of the sandbox's init (pid, mount, net,
// uts, ipc and user), none in the server's.
func TestIsolationEveryEntryPoint(t *testing.T) {
	t.Parallel()
	ts := isoServer(t, nil)
	b := newIsoBox(t, ts, "iso-entry")
	kinds := []string{"pid", "mnt", "net", "uts", "ipc", "user"}
	nsOf := func(pid string) string {
		var links []string
		for _, k := range kinds {
			l, err := os.Readlink("/proc/" + pid + "/ns/" + k)
			if err != nil {
				t.Fatalf("read the %s namespace of pid %s: %v", k, pid, err)
			}
			links = append(links, l)
		}
		return strings.Join(links, " ")
	}
	want := nsOf(strconv.Itoa(b.init))
	if own := nsOf("self"); own == want {
		t.Fatalf("the sandbox's init shares this process's namespaces: %s", own)
	}
	readlinks := "readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net /proc/self/ns/uts /proc/self/ns/ipc /proc/self/ns/user | tr '\\n' ' '"

	if got := strings.TrimSpace(b.sh(readlinks)); got != want {
		t.Errorf("exec runs in namespaces %s; the init's are %s", got, want)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+b.id+"/sessions", map[string]any{"id": "s"})
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/"+b.id+"/sessions/s/exec", map[string]any{"command": readlinks}).json(t, &res)
	if got := strings.TrimSpace(res.Stdout); res.ExitCode != 0 || got != want {
		t.Errorf("a session command runs in namespaces %q (exit %d, %q); the init's are %s", got, res.ExitCode, res.Stderr, want)
	}
	p := b.start("exec sleep 1000")
	var term terminalJSON
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/"+b.id+"/terminals/t", map[string]any{}).json(t, &term)
	if term.Process == nil {
		t.Fatalf("terminal without a process: %+v", term)
	}
	shell := b.process(*term.Process, 0)
	for name, pid := range map[string]int{"a background process": p.PID, "a terminal's shell": shell.PID} {
		host := b.hostPID(pid)
		if host <= 0 {
			t.Fatalf("%s (pid %d) is in no process of the sandbox's pid namespace", name, pid)
		}
		if got := nsOf(strconv.Itoa(host)); got != want {
			t.Errorf("%s runs in namespaces %s; the init's are %s", name, got, want)
		}
	}
}
