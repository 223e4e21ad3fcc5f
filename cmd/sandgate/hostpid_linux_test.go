package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// hostPIDOf returns the host pid of the process that sandbox sb's processes know as
// pid: on the namespace runtime, the process in the pid namespace of sb's init (found
// by its command line, "sandgate-init sb") whose pid there is pid, or -1 if none lives;
// on the local runtime (no such init), pid itself.
func hostPIDOf(t *testing.T, sb string, pid int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	ns := ""
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == "sandgate-init\x00"+sb+"\x00" {
			ns, _ = os.Readlink("/proc/" + e.Name() + "/ns/pid")
			break
		}
	}
	if ns == "" {
		return pid
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
				ids := strings.Fields(f)
				if len(ids) > 1 && ids[len(ids)-1] == strconv.Itoa(pid) {
					host, _ := strconv.Atoi(ids[0])
					return host
				}
			}
		}
	}
	return -1
}
