package actor

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestProcessEventData: process.created and process.exited carry the process object's
// fields with its nulls: no command for argv, no tag or session when unset, and a
// signal with no exit code for a process a signal ended.
func TestProcessEventData(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "ed")
	in, err := n.StartProcess(ctx, "ed", runtime.StartOptions{Argv: []string{"sleep", "30"}})
	must(t, err)
	p, err := n.Process(ctx, "ed", in.ID)
	must(t, err)
	must(t, p.Signal(syscall.SIGKILL))
	_, err = p.Wait(ctx)
	must(t, err)
	want := map[string]string{
		"process.created": `{"argv":["sleep","30"],"command":null,"id":"` + in.ID + `","pid":` + strconv.Itoa(in.PID) + `,"pty":false,"session":null,"tag":null}`,
		"process.exited":  `{"exit_code":null,"id":"` + in.ID + `","signal":"SIGKILL"}`,
	}
	eventually(t, 10*time.Second, "process.exited", func() bool {
		evs, err := n.Events(ctx, "ed", 0, 0)
		must(t, err)
		got := map[string]string{}
		for _, e := range evs {
			got[e.Type] = string(e.Data)
		}
		if got["process.exited"] == "" {
			return false
		}
		for typ, w := range want {
			if got[typ] != w {
				t.Fatalf("%s data %s, want %s", typ, got[typ], w)
			}
		}
		return true
	})
}
