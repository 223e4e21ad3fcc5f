package cluster

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeClock is a monotonic clock that moves only when told.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() time.Duration      { return time.Duration(c.t.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.t.Add(int64(d)) }

// leaseNode is a Node with just a table and a lease, on a fake clock: enough for
// Admit, Epoch and Lease.
func leaseNode(tb testing.TB, self NodeID) (*Node, *fakeClock) {
	tb.Helper()
	clk := &fakeClock{}
	clk.advance(time.Hour)
	n := &Node{cfg: Config{NodeID: self}, fsm: placedFSM(tb, 3), now: clk.now, lease: lease{renewed: make(chan struct{}, 1)}}
	return n, clk
}

// ownedBy returns a sandbox id whose partition id owns in n's table.
func ownedBy(tb testing.TB, n *Node, id NodeID) string {
	tb.Helper()
	for _, sb := range sandboxIDs(4096) {
		if o, _, ok := n.Owner(sb); ok && o == id {
			return sb
		}
	}
	tb.Fatalf("no sandbox owned by %s", id)
	return ""
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	self, other := ids(3)[0], ids(3)[1]
	tests := []struct {
		name      string
		sandbox   func(*Node) string
		lease     time.Duration // lease end relative to now; 0: never leased
		closed    bool
		want      error
		wantOwner NodeID
	}{
		{name: "owned, lease valid", sandbox: func(n *Node) string { return ownedBy(t, n, self) }, lease: time.Second},
		{name: "owned, lease ended", sandbox: func(n *Node) string { return ownedBy(t, n, self) }, lease: -time.Nanosecond, want: ErrLeaseExpired},
		{name: "owned, lease ends now", sandbox: func(n *Node) string { return ownedBy(t, n, self) }, lease: -0, want: ErrLeaseExpired},
		{name: "owned, never leased", sandbox: func(n *Node) string { return ownedBy(t, n, self) }, want: ErrLeaseExpired},
		{name: "owned, closed", sandbox: func(n *Node) string { return ownedBy(t, n, self) }, lease: time.Second, closed: true, want: ErrClosed},
		{name: "other owner", sandbox: func(n *Node) string { return ownedBy(t, n, other) }, lease: time.Second, want: ErrNotOwner, wantOwner: other},
		{name: "unowned pin", sandbox: func(n *Node) string { return "sb-orphan-pin" }, lease: time.Second, want: ErrNotOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, clk := leaseNode(t, self)
			// A pin with no owner: the sandbox has no owner at all.
			if r := n.fsm.Apply(&raft.Log{Index: 1000, Type: raft.LogCommand, Data: encodePin("sb-orphan-pin", nil, "", 0)}); r != nil {
				t.Fatal(r)
			}
			if tt.lease != 0 {
				n.lease.extend(clk.now() + tt.lease)
			}
			n.closed.Store(tt.closed)
			sb := tt.sandbox(n)
			err := n.Admit(sb)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Admit = %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Admit = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrNotOwner) {
				o, ok := OwnerOf(err)
				_, epoch, _ := n.Owner(sb)
				if !ok || o.Owner != tt.wantOwner || o.Epoch != epoch || o.SandboxID != sb || n.Epoch(sb) != epoch {
					t.Fatalf("NotOwnerError %+v, want owner %q epoch %d", o, tt.wantOwner, epoch)
				}
			}
		})
	}
}

func TestLeaseGetter(t *testing.T) {
	t.Parallel()
	n, clk := leaseNode(t, "node-00")
	if ok, until := n.Lease(); ok || !until.IsZero() {
		t.Fatalf("Lease before any grant = %v, %v", ok, until)
	}
	end := clk.now() + time.Second
	n.lease.extend(end)
	n.lease.extend(end - time.Millisecond) // never backwards
	if ok, until := n.Lease(); !ok || until != monoBase.Add(end) {
		t.Fatalf("Lease = %v, %v; want true, %v", ok, until, monoBase.Add(end))
	}
	clk.advance(time.Second)
	if ok, _ := n.Lease(); ok {
		t.Fatal("lease valid at its end")
	}
}

// TestLeaseHammer extends the lease from several goroutines while others read it:
// the end only moves forward and the wake-up channel never blocks a writer.
func TestLeaseHammer(t *testing.T) {
	t.Parallel()
	n, clk := leaseNode(t, "node-00")
	sb := ownedBy(t, n, "node-00")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n.lease.extend(clk.now() + time.Duration(i%97)*time.Millisecond)
			}
		}()
		go func() {
			defer wg.Done()
			last := time.Duration(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				u := time.Duration(n.lease.until.Load())
				if u < last {
					t.Errorf("lease went back from %v to %v", last, u)
					return
				}
				last = u
				if err := n.Admit(sb); err != nil && !errors.Is(err, ErrLeaseExpired) {
					t.Errorf("Admit: %v", err)
					return
				}
			}
		}()
	}
	time.AfterFunc(50*time.Millisecond, func() { close(stop) })
	wg.Wait()
	if got := time.Duration(n.lease.until.Load()); got != clk.now()+96*time.Millisecond {
		t.Fatalf("lease ends at %v, want the largest extension %v", got, clk.now()+96*time.Millisecond)
	}
}

// BenchmarkAdmit is the check before every actor turn, admitted (the hot path), next
// to Owner, its table lookup alone, in the same run.
func BenchmarkAdmit(b *testing.B) {
	n := &Node{cfg: Config{NodeID: "node-00"}, fsm: placedFSM(b, 3), now: mono, lease: lease{renewed: make(chan struct{}, 1)}}
	n.lease.extend(mono() + time.Hour)
	var keys []string
	for _, sb := range sandboxIDs(4096) {
		if o, _, _ := n.Owner(sb); o == "node-00" && len(keys) < 1024 {
			keys = append(keys, sb)
		}
	}
	keys = keys[:1024]
	b.Run("admit", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := n.Admit(keys[i&1023]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("owner", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, ok := n.Owner(keys[i&1023]); !ok {
				b.Fatal("unowned")
			}
			i++
		}
	})
}
