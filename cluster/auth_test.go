package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRawConnectionsRefused opens connections to a node's raft port that do not
// know the cluster secret: each is closed without an answer, counted, and the
// node's raft state does not move.
func TestRawConnectionsRefused(t *testing.T) {
	t.Parallel()
	// A patient lease: a lone node's renewals are commits, and on a loaded machine
	// a 300 ms lease lapsed and came back, which moved the table (in one CI run from
	// index 6 to 103) with no connection's help.
	cfg := testConfig("solo", t.TempDir(), "127.0.0.1:0", false)
	cfg.LeaseTTL = patientLease
	n := openNode(t, cfg)
	waitFor(t, "solo to place all partitions", func() bool { return placed(n, n) })
	// The leader's own lease entries keep the applied index moving; the table does
	// not move, and neither does the term.
	term, table := n.Term(), n.TableIndex()
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = byte(i)
	}
	wrong := newAuthenticator([]byte("another secret of thirty-two bytes!"), discard)
	tests := []struct {
		name string
		talk func(c net.Conn) error
	}{
		{"raft rpc without handshake", func(c net.Conn) error {
			_, err := c.Write(append([]byte{0}, junk...)) // rpcAppendEntries and garbage
			return err
		}},
		{"heartbeat without handshake", func(c net.Conn) error {
			_, err := c.Write(append([]byte{streamHeartbeat}, junk...))
			return err
		}},
		{"handoff report without handshake", func(c net.Conn) error {
			if _, err := c.Write([]byte{streamHandoff}); err != nil {
				return err
			}
			return writeFrame(c, encodeReport(Handoff{From: "solo", To: "x", Epoch: 1, Partitions: []int{0}}))
		}},
		{"handshake with a wrong secret", func(c net.Conn) error {
			if err := wrong.dial(c); !errors.Is(err, errHandshake) {
				t.Errorf("dial with a wrong secret: %v, want errHandshake", err)
			}
			return nil
		}},
		{"magic then a forged proof", func(c net.Conn) error {
			hello := append(append([]byte(nil), authMagic[:]...), junk[:nonceLen]...)
			if _, err := c.Write(hello); err != nil {
				return err
			}
			reply := make([]byte, nonceLen+macLen)
			if _, err := io.ReadFull(c, reply); err != nil {
				return err
			}
			_, err := c.Write(junk[:macLen])
			return err
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", n.RaftAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := tt.talk(c); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(patience))
			buf := make([]byte, 256)
			for {
				_, err := c.Read(buf)
				if err == nil {
					continue // the acceptor's nonce and proof, before it checks ours
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the node kept the connection open")
				}
				break
			}
			waitFor(t, "the rejection to be counted", func() bool { return n.RejectedConns() >= uint64(i+1) })
		})
	}
	if got := n.RejectedConns(); got != uint64(len(tests)) {
		t.Errorf("RejectedConns = %d, want %d", got, len(tests))
	}
	if n.Term() != term || n.TableIndex() != table {
		t.Errorf("raft moved: term %d→%d, table index %d→%d", term, n.Term(), table, n.TableIndex())
	}
}

// TestWrongSecretCannotJoin adds a node with a wrong secret to the raft
// configuration: the leader cannot replicate to it and it cannot heartbeat, while a
// node with the right secret joins and gets a lease.
func TestWrongSecretCannotJoin(t *testing.T) {
	t.Parallel()
	n0 := openNode(t, testConfig("n0", t.TempDir(), "127.0.0.1:0", false))
	waitFor(t, "n0 to place all partitions", func() bool { return placed(n0, n0) })

	badCfg := testConfig("bad", t.TempDir(), "127.0.0.1:0", true)
	badCfg.Secret = []byte("another secret of thirty-two bytes!")
	bad := openNode(t, badCfg)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := n0.Join(ctx, bad.Self()); err != nil {
		t.Fatal(err)
	}
	// The leader's replication dials bad, which answers with the wrong proof.
	waitFor(t, "bad to refuse the leader's raft", func() bool { return bad.RejectedConns() > 0 })
	before := n0.RejectedConns()
	if _, err := bad.stream.dialHeartbeat(n0.RaftAddr(), 5*time.Second); !errors.Is(err, errHandshake) {
		t.Fatalf("heartbeat dial with a wrong secret: %v, want errHandshake", err)
	}
	waitFor(t, "n0 to count the heartbeat connection", func() bool { return n0.RejectedConns() > before })
	if ok, _ := bad.Lease(); ok || bad.AppliedIndex() != 0 || len(bad.Members()) != 0 {
		t.Fatalf("bad got in: lease %v, applied %d, members %v", ok, bad.AppliedIndex(), bad.Members())
	}
	if err := n0.Remove(ctx, bad.ID()); err != nil {
		t.Fatal(err)
	}

	good := openNode(t, testConfig("good", t.TempDir(), "127.0.0.1:0", true))
	joinVia(t, []*Node{n0}, good)
	waitFor(t, "good's lease", func() bool { ok, _ := good.Lease(); return ok })
	if bad.AppliedIndex() != 0 {
		t.Fatalf("bad applied index %d", bad.AppliedIndex())
	}
}

// BenchmarkHandshake measures one node handshake over loopback TCP, both sides.
func BenchmarkHandshake(b *testing.B) {
	a := newAuthenticator(testSecret, discard)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	errs := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(errs)
				return
			}
			if err := a.accept(c); err != nil {
				errs <- err
			}
			c.Close()
		}
	}()
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if err := a.dial(c); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.StopTimer()
	ln.Close()
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// TestRejectLogsOncePerSource: rejections are all counted, but logged once a minute
// per source host whatever its port.
func TestRejectLogsOncePerSource(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := newAuthenticator(testSecret, slog.New(slog.NewTextHandler(&buf, nil)))
	for _, src := range []string{"10.0.0.1:1000", "10.0.0.1:1001", "10.0.0.2:1000", "10.0.0.1:1002"} {
		addr, err := net.ResolveTCPAddr("tcp", src)
		if err != nil {
			t.Fatal(err)
		}
		a.reject(addr, errHandshake)
	}
	if got := a.rejected.Load(); got != 4 {
		t.Errorf("counted %d rejections, want 4", got)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 2 {
		t.Errorf("logged %d lines, want 2 (one per source host):\n%s", lines, buf.String())
	}
}
