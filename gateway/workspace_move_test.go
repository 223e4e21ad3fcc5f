package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/cluster"
)

// movedData returns the data of sb's sandbox.moved events, read through ts.
func movedData(t *testing.T, ts *testServer, sb string) []map[string]any {
	t.Helper()
	var list struct {
		Events []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	ts.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/events?since=0", nil).json(t, &list)
	var moved []map[string]any
	for _, e := range list.Events {
		if e.Type == "sandbox.moved" {
			moved = append(moved, e.Data)
		}
	}
	return moved
}

// lostOf returns the "lost" list of a sandbox.moved event.
func lostOf(d map[string]any) []string {
	out := []string{}
	l, _ := d["lost"].([]any)
	for _, v := range l {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// drainedMove drains a, which owns sb, and waits until sb is served by another node
// that applied the move; it returns the new owner. It skips the test when the move
// was not a planned one on a loaded machine (a fenced, or its hook outlived the
// gate's window), as TestDrainMovesSandboxes does.
func drainedMove(t *testing.T, tr *trio, sb string) (owner cluster.NodeID, degraded func() bool) {
	t.Helper()
	a, b := tr.node("a"), tr.node("b")
	part := cluster.PartitionOf(sb)
	risk := watchPlanRisk(a, func(h cluster.Handoff) bool { return slices.Contains(h.Partitions, part) })
	eventually(t, clusterPatience, "the drain to be accepted", func() bool {
		r, err := b.send(testAdminToken, "POST", "/v1/cluster/members/a/drain", nil)
		return err == nil && r.status == http.StatusAccepted
	})
	eventually(t, clusterPatience, sb+" to be served by a new owner", func() bool {
		o, _, ok := b.srv.cluster.Owner(sb)
		if !ok || o == "a" {
			return false
		}
		owner = o
		r, err := b.send(testToken, "GET", "/v1/sandboxes/"+sb, nil)
		return err == nil && r.status == http.StatusOK
	})
	return owner, risk.degraded
}

// wantPlannedMove checks, through ts, that sb has one sandbox.moved event, planned,
// to owner, that lost nothing; it skips the test when it has one but the move was
// degraded on a loaded machine (watchPlanRisk), which rightly loses the workspace.
// Tests call it before they read files, which such a move does not bring along.
func wantPlannedMove(t *testing.T, ts *testServer, sb string, owner cluster.NodeID, degraded func() bool) {
	t.Helper()
	moved := movedData(t, ts, sb)
	if len(moved) == 1 && moved[0]["planned"] == true && moved[0]["to"] == string(owner) && len(lostOf(moved[0])) == 0 {
		return
	}
	raw, _ := json.Marshal(moved)
	if len(moved) == 1 && degraded() {
		t.Skipf("sandbox.moved %s: not a planned move on a loaded machine", raw)
	}
	t.Fatalf("sandbox.moved events: %s, want one planned to %s that lost nothing", raw, owner)
}

// mustSetUp is ts.must for a test's set-up in a trio, retried while the answer is 503:
// a loaded machine sees elections right after the trio forms, and a write then may
// be refused as of unknown outcome (every set-up request here is idempotent).
func mustSetUp(t *testing.T, ts *testServer, want int, method, path string, body any) response {
	t.Helper()
	var r response
	eventually(t, clusterPatience, method+" "+path, func() bool {
		var err error
		r, err = ts.send(testToken, method, path, body)
		return err == nil && r.status != http.StatusServiceUnavailable
	})
	if r.status != want && !(want == http.StatusCreated && r.status == http.StatusOK) {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// TestDrainStreamsWorkspace writes files through the files API and a process (a
// subdirectory, a symlink, an executable, a 10 MiB file) into a sandbox owned by a,
// drains a, and reads them back through both other nodes, byte for byte, with the
// link still a link and the executable still executable. The new owner's
// sandbox.moved is planned and lost nothing; no temporary entry is left on it.
func TestDrainStreamsWorkspace(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000 })
	b, c := tr.node("b"), tr.node("c")
	sb := tr.ownedBy("ws", "a")
	mustSetUp(t, c, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	big := make([]byte, 10<<20)
	_, _ = rand.Read(big)
	files := filesPath(sb)
	mustSetUp(t, c, http.StatusNoContent, "PUT", files+"?path=sub/dir/a.txt", "hello\n")
	mustSetUp(t, c, http.StatusNoContent, "PUT", files+"?path=big.bin", big)
	mustSetUp(t, c, http.StatusNoContent, "PUT", files+"?path=run.sh&mode=0755", "#!/bin/sh\necho ran\n")
	mustSetUp(t, c, http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": "ln -sfn sub/dir/a.txt link && mkdir -p empty"})

	owner, degraded := drainedMove(t, tr, sb)
	wantPlannedMove(t, b, sb, owner, degraded)
	for _, ts := range []*testServer{b, c} {
		if got := ts.mustSettled(http.StatusOK, "GET", files+"?path=big.bin", nil).body; !bytes.Equal(got, big) {
			t.Fatalf("big.bin through %s: %d bytes, not the ones written", ts.srv.cluster.ID(), len(got))
		}
		if got := string(ts.mustSettled(http.StatusOK, "GET", files+"?path=link", nil).body); got != "hello\n" {
			t.Fatalf("link through %s: %q", ts.srv.cluster.ID(), got)
		}
	}
	var ex execJSON
	b.must(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec",
		map[string]any{"command": "readlink link; ./run.sh; test -d empty && echo empty"}).json(t, &ex)
	if ex.Stdout != "sub/dir/a.txt\nran\nempty\n" {
		t.Fatalf("after the move: %q (stderr %q)", ex.Stdout, ex.Stderr)
	}
	assertNoIncoming(t, tr.node(string(owner)))
	wantMoves(t, tr.node("a"), moveSent, moveOK)
	wantMoves(t, tr.node(string(owner)), moveReceived, moveOK)
	if n := testutil.ToFloat64(tr.node("a").srv.metrics.moveBytes); n < float64(len(big)) {
		t.Errorf("sandgate_workspace_move_bytes_total on a: %v, want at least %d", n, len(big))
	}
}

// wantMoves checks that ts counted a workspace stream in direction with result.
func wantMoves(t *testing.T, ts *testServer, direction, result string) {
	t.Helper()
	if n := testutil.ToFloat64(ts.srv.metrics.moves.WithLabelValues(direction, result)); n < 1 {
		t.Errorf("sandgate_workspace_moves_total{%s,%s} on %s: %v", direction, result, ts.srv.cluster.ID(), n)
	}
}

// TestDrainBrokenWorkspaceStream drains a while its workspace streams break after
// 1 MiB, as when the old owner dies mid-stream: the move goes on, the new owner's
// sandbox.moved names the workspace lost, and none of the files that were on their
// way shows up there, nor any temporary entry.
func TestDrainBrokenWorkspaceStream(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000 })
	a, b := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("wsb", "a")
	mustSetUp(t, b, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	files := filesPath(sb)
	mustSetUp(t, b, http.StatusNoContent, "PUT", files+"?path=first.txt", "first\n")
	mustSetUp(t, b, http.StatusNoContent, "PUT", files+"?path=big.bin", make([]byte, 4<<20))
	var broken atomic.Int32
	cut := func(s string, r io.Reader) io.Reader {
		if s != sb {
			return r
		}
		broken.Add(1)
		return io.MultiReader(io.LimitReader(r, 1<<20), errReader{errors.New("the old owner died")})
	}
	a.srv.moveBodyHook.Store(&cut)

	owner, degraded := drainedMove(t, tr, sb)
	if broken.Load() == 0 {
		t.Fatal("no workspace stream was sent for the sandbox")
	}
	moved := movedData(t, b, sb)
	if len(moved) != 1 || !slices.Contains(lostOf(moved[0]), "workspace") {
		raw, _ := json.Marshal(moved)
		t.Fatalf("sandbox.moved events: %s, want one that lost the workspace", raw)
	}
	if moved[0]["planned"] != true && !degraded() {
		t.Errorf("sandbox.moved %v: want planned", moved[0])
	}
	b.mustSettled(http.StatusNotFound, "GET", files+"?path=first.txt", nil)
	var dir struct {
		Entries []map[string]any `json:"entries"`
	}
	b.mustSettled(http.StatusOK, "GET", files+"?path=.", nil).json(t, &dir)
	if len(dir.Entries) != 0 {
		t.Fatalf("the new owner's workspace holds %v, want nothing", dir.Entries)
	}
	assertNoIncoming(t, tr.node(string(owner)))
	wantMoves(t, a, moveSent, moveFailed)
	wantMoves(t, tr.node(string(owner)), moveReceived, moveFailed)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// assertNoIncoming checks that ts's workspaces and disks directories hold no entry an
// import left unfinished.
func assertNoIncoming(t *testing.T, ts *testServer) {
	t.Helper()
	for _, d := range []string{"workspaces", "disks"} {
		ents, _ := os.ReadDir(filepath.Join(ts.srv.cfg.DataDir, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("%s/%s left on %s", d, e.Name(), ts.srv.cluster.ID())
			}
		}
	}
}

func filesPath(sb string) string { return "/v1/sandboxes/" + sb + "/files" }

// TestDrainWorkspaceOverBound drains a with two sandboxes: one whose files are over
// Config.WorkspaceMoveMax, which arrives without its workspace (sandbox.moved names
// it lost), and one under it that a no longer runs when the drain begins, whose
// workspace a streams all the same.
func TestDrainWorkspaceOverBound(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000; c.WorkspaceMoveMax = 1 << 20 })
	a, b := tr.node("a"), tr.node("b")
	over, under := tr.ownedBy("wso", "a"), tr.ownedBy("wsu", "a")
	mustSetUp(t, b, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": over})
	mustSetUp(t, b, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": under})
	mustSetUp(t, b, http.StatusNoContent, "PUT", filesPath(over)+"?path=big.bin", make([]byte, 2<<20))
	mustSetUp(t, b, http.StatusNoContent, "PUT", filesPath(under)+"?path=small.txt", "small\n")
	if err := a.srv.node.Deactivate(context.Background(), under); err != nil {
		t.Fatal(err)
	}
	drainedMove(t, tr, over)
	eventually(t, clusterPatience, under+" to be served by a new owner", func() bool {
		o, _, ok := b.srv.cluster.Owner(under)
		return ok && o != "a"
	})
	if got := string(b.mustSettled(http.StatusOK, "GET", filesPath(under)+"?path=small.txt", nil).body); got != "small\n" {
		t.Fatalf("small.txt after the move: %q", got)
	}
	b.mustSettled(http.StatusNotFound, "GET", filesPath(over)+"?path=big.bin", nil)
	for sb, want := range map[string]bool{over: true, under: false} {
		moved := movedData(t, b, sb)
		if len(moved) != 1 || slices.Contains(lostOf(moved[0]), "workspace") != want {
			raw, _ := json.Marshal(moved)
			t.Errorf("%s: sandbox.moved %s, want workspace lost: %v", sb, raw, want)
		}
	}
}

// gatedReader holds its first read until release is closed, and says when it began
// waiting: a stream whose sender is slow to start.
type gatedReader struct {
	r       io.Reader
	release <-chan struct{}
	waiting *atomic.Bool
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.release != nil {
		g.waiting.Store(true)
		<-g.release
		g.release = nil
	}
	return g.r.Read(p)
}

// TestDrainHoldsUntilWorkspaceArrives: the handoff completes while the workspace is
// still on its way (the old owner announced it and reported at once), and the new
// owner holds the sandbox's requests (503 past the hold timeout, never an empty
// workspace) until the stream ended; then its files are there.
func TestDrainHoldsUntilWorkspaceArrives(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000 })
	a, b := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("wsh", "a")
	mustSetUp(t, b, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	mustSetUp(t, b, http.StatusNoContent, "PUT", filesPath(sb)+"?path=f.txt", "here\n")
	release := make(chan struct{})
	var waiting atomic.Bool
	gate := func(s string, r io.Reader) io.Reader {
		if s != sb {
			return r
		}
		return &gatedReader{r: r, release: release, waiting: &waiting}
	}
	a.srv.moveBodyHook.Store(&gate)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	eventually(t, clusterPatience, "the drain to be accepted", func() bool {
		r, err := b.send(testAdminToken, "POST", "/v1/cluster/members/a/drain", nil)
		return err == nil && r.status == http.StatusAccepted
	})
	part := cluster.PartitionOf(sb)
	eventually(t, clusterPatience, "the handoff to complete with the stream held", func() bool {
		if !waiting.Load() {
			return false
		}
		for _, n := range tr.nodes {
			if p := n.srv.cluster.Partition(part); p.State != cluster.PartitionActive || p.Owner == "a" {
				return false
			}
		}
		return true
	})
	owner := tr.node(string(b.srv.cluster.Partition(part).Owner))
	if !owner.srv.handoffs.isArriving(sb) {
		t.Fatalf("%s does not hold %s while its workspace is on its way", owner.srv.cluster.ID(), sb)
	}
	// Held for the hold timeout (5 s), then 503: never served from an empty workspace.
	if r := b.do("GET", filesPath(sb)+"?path=f.txt", nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("while the workspace streams: %d %s, want 503", r.status, r.body)
	}
	close(release)
	released = true
	eventually(t, clusterPatience, "the file on the new owner", func() bool {
		r, err := b.send(testToken, "GET", filesPath(sb)+"?path=f.txt", nil)
		return err == nil && r.status == http.StatusOK && string(r.body) == "here\n"
	})
	moved := movedData(t, b, sb)
	if len(moved) != 1 || len(lostOf(moved[0])) != 0 {
		raw, _ := json.Marshal(moved)
		t.Fatalf("sandbox.moved %s, want one that lost nothing", raw)
	}
}
