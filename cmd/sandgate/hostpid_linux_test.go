package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/sandgate/sandgate/internal/procfs"
)

// hostPIDOf returns the host pid of the process that sandbox sb's processes know as
// pid: on the namespace runtime, the process in the pid namespace of sb's init (found
// by its command line, "sandgate-init sb") whose pid there is pid, or -1 if none lives;
// on the local runtime (no such init), pid itself.
func hostPIDOf(t *testing.T, sb string, pid int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == "sandgate-init\x00"+sb+"\x00" {
			initPID, _ := strconv.Atoi(e.Name())
			return procfs.HostPID("/proc", initPID, pid)
		}
	}
	return pid
}
