package clustertest

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A killed node's processes go with it, even those in process groups of their own
// that no death signal reaches (the local runtime's).
func TestKillEndsDescendants(t *testing.T) {
	for _, stop := range []string{"kill", "stop"} {
		t.Run(stop, func(t *testing.T) {
			c := Start(t, &Config{Nodes: 1, Args: []string{"--runtime", "local"}})
			n := c.Nodes[0]
			must(t, n, "POST", "/v1/sandboxes", map[string]string{"id": "tree"}, http.StatusCreated, nil)
			var proc struct{ ID string }
			must(t, n, "POST", "/v1/sandboxes/tree/processes", map[string]string{"command": "setsid sleep 600 & wait"}, http.StatusCreated, &proc)
			tree := descendants(n.PID())
			defer tree.close()
			sleeping := 0
			for _, pid := range tree.pids {
				if comm(pid) == "sleep" {
					sleeping++
				}
			}
			if sleeping == 0 {
				t.Fatalf("no sleep among the node's descendants %v", tree.pids)
			}
			if stop == "kill" {
				n.Kill(t)
			} else {
				n.Stop(t)
			}
			for i, fd := range tree.fds {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				if k, err := unix.Poll(pfd, 0); err != nil || k != 1 {
					t.Errorf("process %d (%s) outlived its node", tree.pids[i], comm(tree.pids[i]))
				}
			}
		})
	}
}

// comm returns a process's command name, or "".
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}
