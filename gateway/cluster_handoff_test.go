package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// TestHandoffEndsStreamsInsideTheGate: a handoff ends the sandbox's streams first, and
// a stream's end is a turn of the sandbox's actor (a client detaching), which must be
// let through like the deactivation after it. A turn refused there would end the
// activation without saving, as in a crash: the move would record its process as
// lost instead of exited. The test registers a stream whose end detaches a client and
// then asks the actor how many remain, and drains the sandbox's owner.
func TestHandoffEndsStreamsInsideTheGate(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000 })
	a, b := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("gt", "a")
	b.sandbox(sb)
	var p processJSON
	b.must(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes", map[string]any{"command": "sleep 300"}).json(t, &p)

	var fenced atomic.Bool // a lease that lapsed on a loaded machine makes any move unplanned
	fence := func() { fenced.Store(true); a.srv.fence() }
	a.srv.hooks.onFence.Store(&fence)
	release, err := a.srv.node.Attach(t.Context(), sb)
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		attached  int
		err       error
		inHandoff bool
	}
	ended := make(chan turn, 1)
	a.srv.streams.add(sb, func() {
		release()
		n, err := a.srv.node.Attached(context.Background(), sb)
		ended <- turn{n, err, a.srv.cluster.Partition(cluster.PartitionOf(sb)).State == cluster.PartitionHandoff}
	})

	b.doToken(testAdminToken, "POST", "/v1/cluster/members/a/drain", nil).want(t, http.StatusAccepted)
	var got turn
	select {
	case got = <-ended:
	case <-time.After(clusterPatience):
		t.Fatal("the drain did not end the stream")
	}
	if fenced.Load() {
		t.Skip("a's lease lapsed (a loaded machine): the move was not a planned one")
	}
	if !got.inHandoff || got.err != nil || got.attached != 0 {
		t.Fatalf("the turn after the stream's end: %d attached, err %v, in handoff %v; want 0, none, true", got.attached, got.err, got.inHandoff)
	}
	eventually(t, clusterPatience, "the sandbox on another node", func() bool {
		owner, _, ok := b.srv.cluster.Owner(sb)
		return ok && owner != "a"
	})
	var proc struct {
		Status   string  `json:"status"`
		Signal   *string `json:"signal"`
		ExitCode *int    `json:"exit_code"`
	}
	b.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/processes/"+p.ID, nil).json(t, &proc)
	if fenced.Load() {
		t.Skip("a's lease lapsed (a loaded machine): the move was not a planned one")
	}
	if proc.Status != "exited" || proc.Signal == nil && proc.ExitCode == nil {
		t.Fatalf("process after the move: %+v, want exited with a known status (not lost)", proc)
	}
}

// TestHandoffStartsNoNewActivation ends a sandbox's activation while a drain's
// gate is open for it, then makes a request that would start it again here, as a
// stream's late detach or a client's retry does: the gate refuses a new
// activation, so the workspace is free to stream and the move stays planned.
func TestHandoffStartsNoNewActivation(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) { c.RebalanceRate = 1000 })
	a, b := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("na", "a")
	b.sandbox(sb)
	b.must(http.StatusNoContent, "PUT", filesPath(sb)+"?path=kept.txt", "kept\n")
	if !a.srv.node.IsActive(sb) {
		b.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+sb, nil) // active on a again
	}

	var fenced atomic.Bool // a lease that lapsed on a loaded machine makes any move unplanned
	fence := func() { fenced.Store(true); a.srv.fence() }
	a.srv.hooks.onFence.Store(&fence)
	again := make(chan error, 1)
	a.srv.streams.add(sb, func() { // runs inside the handoff, its gate open for sb
		if err := a.srv.node.Deactivate(context.Background(), sb); err != nil {
			again <- fmt.Errorf("deactivate: %w", err)
			return
		}
		_, err := a.srv.node.Attached(context.Background(), sb)
		again <- err
	})

	b.doToken(testAdminToken, "POST", "/v1/cluster/members/a/drain", nil).want(t, http.StatusAccepted)
	var err error
	select {
	case err = <-again:
	case <-time.After(clusterPatience):
		t.Fatal("the drain did not end the stream")
	}
	if fenced.Load() {
		t.Skip("a's lease lapsed (a loaded machine): the move was not a planned one")
	}
	if !errors.Is(err, actor.ErrUnavailable) {
		t.Fatalf("a request after the activation ended inside the handoff: %v, want refused (%v)", err, actor.ErrUnavailable)
	}
	eventually(t, clusterPatience, "the sandbox on another node", func() bool {
		owner, _, ok := b.srv.cluster.Owner(sb)
		return ok && owner != "a"
	})
	if got := string(b.mustSettled(http.StatusOK, "GET", filesPath(sb)+"?path=kept.txt", nil).body); got != "kept\n" {
		t.Fatalf("kept.txt after the move: %q", got)
	}
	if fenced.Load() {
		t.Skip("a's lease lapsed (a loaded machine): the move was not a planned one")
	}
	moved := movedData(t, b, sb)
	if len(moved) != 1 || moved[0]["planned"] != true || slices.Contains(lostOf(moved[0]), "workspace") {
		t.Fatalf("sandbox.moved %v, want one planned move that lost no workspace", moved)
	}
}
