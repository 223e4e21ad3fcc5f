package main

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// hostPIDOf returns the host pid of the process that sandbox sb of the serve process
// server knows as pid: on the namespace runtime, the process in the pid namespace of
// sb's init (server's child with the command line "sandgate-init sb") whose pid there
// is pid, or -1 if none lives; on the local runtime (no such init), pid itself.
func hostPIDOf(t *testing.T, server int, sb string, pid int) int {
	t.Helper()
	initPID := proctest.ChildByCmdline("/proc", server, "sandgate-init\x00"+sb+"\x00")
	if initPID < 0 {
		return pid
	}
	return proctest.HostPID("/proc", initPID, pid)
}
