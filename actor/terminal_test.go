package actor

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestTerminalSizeSaved: a terminal's latest size survives hibernation and a node
// restart, whether it was set through ResizeTerminal or on the PTY directly (as a
// WebSocket resize control does); until its shell is started again the terminal shows
// no process and status "exited", and the new shell gets the saved size.
func TestTerminalSizeSaved(t *testing.T) {
	t.Parallel()
	resizes := []struct {
		name   string
		resize func(t *testing.T, n *testNode, p *runtime.Process)
	}{
		{name: "api", resize: func(t *testing.T, n *testNode, _ *runtime.Process) {
			must(t, n.ResizeTerminal(tctx(t), "ts", "tt", 120, 40))
		}},
		{name: "pty", resize: func(t *testing.T, _ *testNode, p *runtime.Process) {
			must(t, p.Resize(120, 40))
		}},
		{name: "api after the shell exited", resize: func(t *testing.T, n *testNode, p *runtime.Process) {
			// The PTY's last size is older than the one set afterwards.
			must(t, p.Resize(90, 25))
			_, err := p.Write([]byte("exit\r"))
			must(t, err)
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("shell did not exit")
			}
			must(t, n.ResizeTerminal(tctx(t), "ts", "tt", 120, 40))
		}},
	}
	ends := []struct {
		name string
		end  func(t *testing.T, n *testNode) *testNode
	}{
		{name: "restart", end: func(t *testing.T, n *testNode) *testNode {
			closeNode(t, n)
			cfg := *n.cfg
			return reopen(t, &cfg, n.clock)
		}},
		{name: "hibernation", end: func(t *testing.T, n *testNode) *testNode {
			n.clock.Advance(11 * time.Minute)
			eventually(t, 10*time.Second, "hibernated", func() bool {
				in, err := n.GetSandbox(tctx(t), "ts")
				return err == nil && in.State == StateHibernated
			})
			return n
		}},
	}
	for _, rs := range resizes {
		for _, e := range ends {
			t.Run(rs.name+" then "+e.name, func(t *testing.T) {
				t.Parallel()
				n := newTestNode(t, func(c *Config) {
					c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: 2 * time.Hour}
					c.PassivateAfter = 24 * time.Hour
				})
				ctx := tctx(t)
				mustCreate(t, n, "ts")
				_, created, err := n.PutTerminal(ctx, "ts", "tt", TerminalSpec{Cols: 100, Rows: 30})
				must(t, err)
				if !created {
					t.Fatal("terminal existed")
				}
				_, p, err := n.GetTerminal(ctx, "ts", "tt")
				must(t, err)
				rs.resize(t, n, p)
				n = e.end(t, n)

				terms, err := n.ListTerminals(ctx, "ts")
				must(t, err)
				if len(terms) != 1 {
					t.Fatalf("terminals %+v", terms)
				}
				if in := terms[0]; in.Cols != 120 || in.Rows != 40 || in.Status != "exited" || in.Process != "" {
					t.Fatalf("listed %+v, want 120x40, exited, no process", in)
				}
				in, p, err := n.GetTerminal(ctx, "ts", "tt")
				must(t, err)
				if in.Cols != 120 || in.Rows != 40 || in.Status != "running" || in.Process != p.ID() {
					t.Fatalf("restarted %+v", in)
				}
				if pi := p.Info(); pi.Cols != 120 || pi.Rows != 40 {
					t.Fatalf("new shell's PTY is %dx%d", pi.Cols, pi.Rows)
				}
			})
		}
	}
}
