package clustertest

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
			tree := sleepingTree(t, n.PID())
			defer tree.close()
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

// sleepingTree returns the descendants of pid once a sleep is among them: the process
// is created before its shell has forked and exec'd the sleep.
func sleepingTree(t *testing.T, pid int) *procTree {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tree := descendants(pid)
		for _, p := range tree.pids {
			if comm(p) == "sleep" {
				return tree
			}
		}
		tree.close()
		if time.Now().After(deadline) {
			t.Fatalf("no sleep among the node's descendants %v within 30 s", tree.pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// comm returns a process's command name, or "".
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}
