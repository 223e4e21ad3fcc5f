// Package proctest finds a sandbox's processes from the host, for tests that check
// what the namespace runtime does to them: the init a server started for a sandbox,
// and the host pid of a process the API names by its pid inside the sandbox.
package proctest

import (
	"os"
	"strconv"
	"strings"
)

// ChildByCmdline returns the pid of a live child of process parent whose command line
// (its arguments, each ended by a NUL) is cmdline, or -1.
func ChildByCmdline(root string, parent int, cmdline string) int {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || StatusField(root, pid, "PPid") != strconv.Itoa(parent) || gone(root, pid) {
			continue
		}
		if b, err := os.ReadFile(root + "/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline {
			return pid
		}
	}
	return -1
}

// HostPID returns the pid, in the namespace of the /proc mounted at root, of the
// process that has pid inner in the pid namespace of process nsPID (a sandbox's init,
// say), or -1 if no such process lives there.
func HostPID(root string, nsPID, inner int) int {
	ns, err := os.Readlink(root + "/" + strconv.Itoa(nsPID) + "/ns/pid")
	if err != nil {
		return -1
	}
	ents, _ := os.ReadDir(root)
	want := strconv.Itoa(inner)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(root + "/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		if ids := strings.Fields(StatusField(root, pid, "NSpid")); len(ids) > 0 && ids[len(ids)-1] == want {
			host, _ := strconv.Atoi(ids[0])
			return host
		}
	}
	return -1
}

// StatusField returns a field of the status file of pid under root (its value,
// trimmed), or "" if the process or the field is gone.
func StatusField(root string, pid int, name string) string {
	return statusFieldOf(root, strconv.Itoa(pid), name)
}

// statusFieldOf is StatusField of the status file under root/path (a pid, or a
// pid's task/<tid>).
func statusFieldOf(root, path, name string) string {
	b, err := os.ReadFile(root + "/" + path + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gone reports whether pid has exited and waits to be reaped (or is not there).
func gone(root string, pid int) bool {
	st := StatusField(root, pid, "State")
	return st == "" || st[0] == 'Z' || st[0] == 'X'
}

// ContextSwitches returns the context switches so far, voluntary and not, of the
// live threads of pid under root (its own status file counts only its main thread's).
// A thread that exited meanwhile is not counted.
func ContextSwitches(root string, pid int) (int64, error) {
	dir := root + "/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		task := strings.TrimPrefix(dir, root+"/") + "/" + t.Name()
		for _, f := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
			c, _ := strconv.ParseInt(statusFieldOf(root, task, f), 10, 64)
			n += c
		}
	}
	return n, nil
}
