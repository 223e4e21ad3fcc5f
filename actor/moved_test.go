package actor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// twoNodes opens nodes a and b on one BoltStore, as a replicated store shows every
// node's sandboxes to every node, each with its own data dir (workspaces) and its
// ownership hooks. b may not run anything until the test says so.
func twoNodes(t *testing.T, name string) (a, b *testNode, ownA, ownB *ownership) {
	t.Helper()
	st := openTestBolt(t)
	ownA, ownB = &ownership{}, &ownership{}
	ownB.deny.Store(true)
	a = newTestNode(t, func(c *Config) { c.NodeID = name + "-a"; c.Storage = st; ownA.config(c) })
	b = newTestNode(t, func(c *Config) { c.NodeID = name + "-b"; c.Storage = st; ownB.config(c) })
	return a, b, ownA, ownB
}

// movedEvents returns the data of sb's sandbox.moved events.
func movedEvents(t *testing.T, n *testNode, sb string) []map[string]any {
	t.Helper()
	evs, err := n.Events(tctx(t), sb, 0, 0)
	must(t, err)
	var out []map[string]any
	for _, e := range evs {
		if e.Type == "sandbox.moved" {
			var d map[string]any
			must(t, json.Unmarshal(e.Data, &d))
			out = append(out, d)
		}
	}
	return out
}

// TestSandboxMoved moves a sandbox from node a to node b, after a fence (unplanned)
// or a Deactivate (planned), with and without work that wrote files or still ran, and
// with and without its workspace streamed from a to b (ExportWorkspace,
// ImportWorkspace): b posts sandbox.moved saying what was lost, records processes a
// ended unseen as owner_lost, and a later activation on b posts nothing more.
func TestSandboxMoved(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		planned   bool
		exec      string // run on a first ("" for nothing)
		proc      bool   // a process still running at the move
		stream    bool   // the workspace is streamed from a to b
		wantLost  []string
		wantOwner bool   // a process.exited with owner_lost
		wantFile  string // content of f on b afterwards ("" for none)
	}{
		{name: "fenced", exec: "echo hi > f", proc: true, wantLost: []string{"processes", "workspace"}, wantOwner: true},
		{name: "planned", planned: true, exec: "echo hi > f", proc: true, wantLost: []string{"processes", "workspace"}},
		{name: "planned-streamed", planned: true, exec: "echo hi > f", proc: true, stream: true, wantLost: []string{"processes"}, wantFile: "hi\n"},
		{name: "planned-streamed-empty", planned: true, exec: "true", stream: true, wantLost: []string{}},
		{name: "planned-idle-files", planned: true, exec: "echo hi > f", wantLost: []string{"workspace"}},
		{name: "planned-no-files", planned: true, wantLost: []string{}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b, ownA, ownB := twoNodes(t, "mv"+string(rune('0'+i)))
			ctx := tctx(t)
			mustCreate(t, a, "mv")
			var p runtime.ProcessInfo
			if tt.exec != "" {
				_, err := a.Exec(ctx, "mv", runtime.ExecOptions{Command: tt.exec})
				must(t, err)
			}
			if tt.proc {
				var err error
				p, err = a.StartProcess(ctx, "mv", runtime.StartOptions{Argv: []string{"sleep", "300"}})
				must(t, err)
			}
			if tt.planned {
				must(t, a.Deactivate(ctx, "mv"))
			} else {
				a.Fence("lease expired")
				eventually(t, 30*time.Second, "a's activation gone", func() bool { return a.ActiveActors() == 0 })
			}
			if tt.stream {
				streamWorkspace(t, a.Node, b.Node, "mv")
			}
			ownA.deny.Store(true) // the table gives the sandbox to b
			ownB.deny.Store(false)
			_, err := b.GetSandbox(ctx, "mv")
			must(t, err)

			moved := movedEvents(t, b, "mv")
			if len(moved) != 1 {
				t.Fatalf("sandbox.moved events: %v", moved)
			}
			d := moved[0]
			var lost []string
			for _, l := range d["lost"].([]any) {
				lost = append(lost, l.(string))
			}
			if d["from"] != a.Node.cfg.NodeID || d["to"] != b.Node.cfg.NodeID || d["planned"] != tt.planned ||
				!slices.Equal(lost, tt.wantLost) {
				t.Fatalf("sandbox.moved = %v, want lost %v planned %v", d, tt.wantLost, tt.planned)
			}
			reasons := exitReasons(t, b, "mv")
			if got := reasons[p.ID] == ownerLostReason; tt.proc && got != tt.wantOwner {
				t.Fatalf("process.exited reasons %v", reasons)
			}
			// The sandbox works on b, with a workspace, and a second activation
			// there is not a move.
			res, err := b.Exec(ctx, "mv", runtime.ExecOptions{Command: "cat f 2>/dev/null; true"})
			must(t, err)
			if string(res.Stdout) != tt.wantFile {
				t.Fatalf("f on b holds %q, want %q", res.Stdout, tt.wantFile)
			}
			passivateAll(t, b)
			_, err = b.GetSandbox(ctx, "mv")
			must(t, err)
			if moved := movedEvents(t, b, "mv"); len(moved) != 1 {
				t.Fatalf("sandbox.moved events after reactivation: %v", moved)
			}
			// a lists it, from storage, as b's.
			l, err := a.ListSandboxes(ctx, nil)
			must(t, err)
			if len(l) != 1 || l[0].Node != b.Node.cfg.NodeID {
				t.Fatalf("a lists %+v", l)
			}
		})
	}
}

// streamWorkspace moves sb's workspace from a to b, as a planned move does.
func streamWorkspace(t *testing.T, a, b *Node, sb string) {
	t.Helper()
	ctx := tctx(t)
	e, err := a.ExportWorkspace(ctx, sb)
	must(t, err)
	defer e.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := e.Pack(ctx, pw, runtime.PackOptions{})
		pw.CloseWithError(err)
		done <- err
	}()
	err = b.ImportWorkspace(ctx, sb, pr, ImportOptions{DiskBytes: e.DiskBytes})
	pr.CloseWithError(err)
	must(t, <-done)
	must(t, err)
}

// TestHammerMove moves sandboxes back and forth between two nodes on one store while
// clients post events to whichever node owns them. A move is what the cluster does:
// the old owner loses admission and is fenced (or releases the sandboxes), the new
// owner is admitted, at a new epoch, only once the old one holds no activation (the
// lease wait). Clients retry a refused post, as the gateway holds a request during a
// move. Every acknowledged event must be stored exactly once, seq without gaps, and
// the only other events are the moves' own.
func TestHammerMove(t *testing.T) {
	t.Parallel()
	st := openTestBolt(t)
	var state atomic.Uint64 // epoch<<2 | owner: 0 a, 1 b, 2 nobody
	state.Store(1 << 2)     // epoch 1, owner a
	own := func(i uint64) func(c *Config) {
		return func(c *Config) {
			c.NodeID = fmt.Sprintf("hammer-move-%d", i)
			c.Storage = st
			c.Admission = func(string) error {
				if state.Load()&3 != i {
					return errNotOwner
				}
				return nil
			}
			c.Epoch = func(string) uint64 { return state.Load() >> 2 }
		}
	}
	nodes := []*testNode{newTestNode(t, own(0)), newTestNode(t, own(1))}
	const sandboxes, workers, per = 3, 6, 40
	for i := range sandboxes {
		mustCreate(t, nodes[0], fmt.Sprintf("hm%d", i))
	}
	stop := make(chan struct{})
	var mover sync.WaitGroup
	var moves atomic.Int64
	mover.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := state.Load()
			from := nodes[s&3]
			state.Store(s>>2<<2 | 2) // the lease ran out: nobody may run them
			if i%2 == 0 {
				from.Fence("hammer")
			} else {
				from.Release(from.ActiveSandboxes())
			}
			eventually(t, 30*time.Second, "the old owner's activations gone", func() bool { return from.ActiveActors() == 0 })
			state.Store((s>>2+1)<<2 | (1 - s&3))
			moves.Add(1)
			time.Sleep(2 * time.Millisecond) // pacing, so requests get through between
		}
	})
	acks := newAckLog(sandboxes)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				sb := (w*5 + i) % sandboxes
				var seq uint64
				var err error
				for range 1000 { // as a gateway holds a request during a move
					n := nodes[min(state.Load()&3, 1)]
					seq, err = n.PostEvent(tctx(t), fmt.Sprintf("hm%d", sb), "agent.h", nil)
					if !errors.Is(err, ErrUnavailable) {
						break
					}
					time.Sleep(500 * time.Microsecond)
				}
				if errors.Is(err, ErrUnavailable) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				acks.note(t, fmt.Sprintf("hm%d", sb), sb, seq)
			}
		})
	}
	wg.Wait()
	close(stop)
	mover.Wait()
	total := 0
	for i := range sandboxes {
		evs, err := nodes[0].Events(tctx(t), fmt.Sprintf("hm%d", i), 0, 0)
		must(t, err)
		total += acks.check(t, fmt.Sprintf("hm%d", i), i, evs, "agent.h", func(e Event) bool {
			return e.Type == "sandbox.created" || e.Type == "sandbox.moved"
		})
	}
	t.Logf("%d of %d posts acknowledged across %d moves", total, workers*per, moves.Load())
}
