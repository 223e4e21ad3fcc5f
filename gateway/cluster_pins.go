package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// Policy pools. A routing policy may answer a create with a pool, a label selector:
// the sandbox runs only on a node whose labels match every label of it. The node
// that serves the create (the sandbox's owner in the table) creates it when its own
// labels match; otherwise it pins the sandbox to a live matching member, through the
// leader (POST /v1/cluster/pins with this node's admin token: the client's token may
// be a tenant's), and re-routes the create to the pinned member: a forwarded create
// is answered 421 with the table index of the pin, which the accepting node waits
// for and retries once; a create this node accepted itself is forwarded from here.
//
// A create that fails after the pin (the pinned member's policy denies it, its
// activation fails, the client goes away, the pinned member cannot be reached) drops
// the pin again through the leader (DELETE /v1/cluster/pins/{sandbox}), on the node
// that pinned and on the pinned member alike: the cluster refuses to drop a pin once
// a record of its sandbox was written under it, so a drop racing a create that did
// succeed changes nothing, and a create that writes after the drop is fenced. What
// neither gets to (a node dying mid-create) the leader's orphan sweep removes.
//
// Deleting a pinned sandbox needs nothing here: the actor's delete batch drops the
// pin in the cluster's log with the records, so a later create of the id is placed
// afresh.

// poolRetryAfter is the Retry-After of a create whose pool no live member matches:
// a member that matches has to be started or to come back.
const poolRetryAfter = 5 * time.Second

type pinRequest struct {
	Sandbox  string            `json:"sandbox"`
	Selector map[string]string `json:"selector"`
}

type pinJSON struct {
	Sandbox string `json:"sandbox"`
	Node    string `json:"node"`
	Epoch   uint64 `json:"epoch"`
}

// clusterPin pins a sandbox to a live member matching a selector (admin tokens only,
// checked first); it runs on the leader, where a follower forwards it.
func (s *Server) clusterPin(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "pin sandboxes"); err != nil {
		return err
	}
	body, err := readJSONBody(r, maxJSONBody)
	if err != nil {
		return err
	}
	var req pinRequest
	if err := decodeJSONBytes(body, &req); err != nil {
		return err
	}
	if !runtime.ValidID(req.Sandbox) {
		return badRequest("invalid sandbox id %q", req.Sandbox)
	}
	if len(req.Selector) == 0 {
		return badRequest("selector: at least one label is required")
	}
	var a cluster.Assignment
	done, err := s.onLeader(w, r, body, func(ctx context.Context) error {
		var err error
		a, err = s.cluster.Pin(ctx, req.Sandbox, req.Selector)
		return pinError(err, req.Selector)
	})
	if err != nil || done {
		return err
	}
	writeJSON(w, http.StatusOK, pinJSON{Sandbox: req.Sandbox, Node: string(a.Owner), Epoch: a.Epoch})
	return nil
}

// clusterUnpin drops the pin of a sandbox under which no record was ever written
// (admin tokens only, checked first); it runs on the leader, where a follower
// forwards it. ?epoch=N drops it only at that epoch (the one the caller pinned at):
// a pin that moved or was replaced since is 409. A pin with records is 409. A
// sandbox that is not pinned is 204, like a drop.
func (s *Server) clusterUnpin(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "unpin sandboxes"); err != nil {
		return err
	}
	sb := r.PathValue("sandbox")
	if !runtime.ValidID(sb) {
		return badRequest("invalid sandbox id %q", sb)
	}
	var epoch uint64
	if v := r.URL.Query().Get("epoch"); v != "" {
		e, err := strconv.ParseUint(v, 10, 64)
		if err != nil || e == 0 {
			return badRequest("epoch: a positive integer, not %q", v)
		}
		epoch = e
	}
	done, err := s.onLeader(w, r, nil, func(ctx context.Context) error {
		err := s.cluster.DropPin(ctx, sb, epoch)
		switch {
		case errors.Is(err, cluster.ErrPinInUse):
			return errorf(http.StatusConflict, codeConflict, "sandbox %s has records under its pin; it stays pinned", sb)
		case errors.Is(err, cluster.ErrStaleEpoch), errors.Is(err, cluster.ErrHandoff):
			return errorf(http.StatusConflict, codeConflict, "the pin of sandbox %s is not at epoch %d any more", sb, epoch)
		}
		return err
	})
	if err != nil || done {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// unpinFailed drops the pin p made for a create that then failed (see the top of
// this file). It runs after the request, on a context of its own: a client gone is
// one of the failures it cleans up after. Errors are logged, not returned; the
// leader's sweep is the fallback.
func (s *Server) unpinFailed(p pinJSON) {
	ctx, cancel := context.WithTimeout(context.Background(), membershipTimeout)
	defer cancel()
	deadline := time.Now().Add(leaderWait)
	for {
		err := s.cluster.DropPin(ctx, p.Sandbox, p.Epoch)
		nl, ok := cluster.LeaderOf(err)
		switch {
		case err == nil:
			s.log.Info("dropped the pin of a sandbox whose create failed", "sandbox", p.Sandbox, "node", p.Node)
			return
		case errors.Is(err, cluster.ErrPinInUse), errors.Is(err, cluster.ErrStaleEpoch):
			return // the create did write, or someone pinned it again since: not ours
		case !ok:
			s.log.Warn("failed to drop the pin of a sandbox whose create failed", "sandbox", p.Sandbox, "err", err)
			return
		case nl.LeaderID != "" && string(nl.LeaderID) != s.cfg.NodeID && nl.HTTPAddr != "":
			s.deletePin(ctx, nl.HTTPAddr, p)
			return
		case time.Now().After(deadline):
			s.log.Warn("failed to drop the pin of a sandbox whose create failed: no leader", "sandbox", p.Sandbox)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// deletePin asks the leader at addr to drop p, with this node's admin token.
func (s *Server) deletePin(ctx context.Context, addr string, p pinJSON) {
	tok := adminToken(s.cfg.Tokens)
	if tok == "" {
		s.log.Warn("cannot drop the pin of a sandbox whose create failed: no admin token to ask the leader with", "sandbox", p.Sandbox)
		return
	}
	u := "http://" + addr + "/v1/cluster/pins/" + p.Sandbox + "?epoch=" + strconv.FormatUint(p.Epoch, 10)
	hr, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	hr.Header.Set(leaderHopsHeader, "1")
	resp, err := s.peers.Do(hr)
	if err != nil {
		s.log.Warn("failed to ask the leader to drop a pin", "sandbox", p.Sandbox, "addr", addr, "err", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxJSONBody))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		s.log.Info("dropped the pin of a sandbox whose create failed", "sandbox", p.Sandbox, "node", p.Node)
	case http.StatusConflict: // written, or pinned again: not ours
	default:
		s.log.Warn("the leader did not drop a pin", "sandbox", p.Sandbox, "status", resp.StatusCode)
	}
}

// pinError turns Pin's "no matching member" into the 503 that names the selector;
// other errors are returned as they are (a *cluster.NotLeaderError among them).
func pinError(err error, sel map[string]string) error {
	if errors.Is(err, cluster.ErrNoMatchingMember) {
		return errorf(http.StatusServiceUnavailable, codeUnavailable,
			"no live node matches the sandbox's pool %s", selectorString(sel)).retry(poolRetryAfter)
	}
	if errors.Is(err, cluster.ErrUnknownMember) {
		// Every member picked went down before its pin applied: members are
		// changing, which is worth a retry, not a 404.
		return errorf(http.StatusServiceUnavailable, codeUnavailable,
			"the nodes picked for the sandbox went down while it was placed: %s", humanMessage(err)).retry(time.Second)
	}
	return err
}

// selectorString renders sel as k=v pairs in key order, comma-separated.
func selectorString(sel map[string]string) string {
	parts := make([]string, 0, len(sel))
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

// labelsMatch reports whether labels carry every label of sel.
func labelsMatch(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// pinSandbox pins sb to a live member matching sel: here when this node leads, else
// through the leader's POST /v1/cluster/pins. While no leader is known it retries for
// up to leaderWait, then answers 503.
func (s *Server) pinSandbox(ctx context.Context, sb string, sel map[string]string) (pinJSON, error) {
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	deadline := time.Now().Add(leaderWait)
	wait := 20 * time.Millisecond
	for {
		a, err := s.cluster.Pin(ctx, sb, sel)
		if err == nil {
			return pinJSON{Sandbox: sb, Node: string(a.Owner), Epoch: a.Epoch}, nil
		}
		nl, ok := cluster.LeaderOf(err)
		if !ok {
			return pinJSON{}, pinError(err, sel)
		}
		if nl.LeaderID != "" && string(nl.LeaderID) != s.cfg.NodeID && nl.HTTPAddr != "" {
			return s.postPin(ctx, nl.HTTPAddr, pinRequest{Sandbox: sb, Selector: sel})
		}
		if time.Now().After(deadline) {
			return pinJSON{}, errNoLeader()
		}
		select {
		case <-ctx.Done():
			return pinJSON{}, errNoLeader()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// postPin asks the leader at addr to pin, with this node's admin token; an error
// answer is relayed as it came (status, code, message, Retry-After).
func (s *Server) postPin(ctx context.Context, addr string, req pinRequest) (pinJSON, error) {
	tok := adminToken(s.cfg.Tokens)
	if tok == "" {
		return pinJSON{}, errorf(http.StatusServiceUnavailable, codeUnavailable,
			"this node cannot place the sandbox in its pool: it is not the leader and has no admin token to ask the leader with")
	}
	b, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/cluster/pins", bytes.NewReader(b))
	if err != nil {
		return pinJSON{}, err
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(leaderHopsHeader, "1")
	resp, err := s.peers.Do(hr)
	if err != nil {
		s.log.Warn("failed to ask the leader for a pin", "addr", addr, "err", err)
		return pinJSON{}, errNoLeader()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
	if err != nil {
		return pinJSON{}, errNoLeader()
	}
	if resp.StatusCode == http.StatusOK {
		var out pinJSON
		if err := json.Unmarshal(raw, &out); err != nil || out.Node == "" {
			return pinJSON{}, errorf(http.StatusBadGateway, codeInternal, "the leader's answer to a pin is not one: %q", raw)
		}
		return out, nil
	}
	var eb errorBody
	if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
		return pinJSON{}, errorf(http.StatusBadGateway, codeInternal, "the leader answered a pin %d: %q", resp.StatusCode, raw)
	}
	e := &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return pinJSON{}, e
}

// hasSandbox reports whether this node holds sandbox id already: a create of it is
// then answered here as before (200, or the conflict), never moved to a pool.
func (s *Server) hasSandbox(r *http.Request, id string) bool {
	if id == "" {
		return false
	}
	_, err := s.node.GetSandbox(r.Context(), id)
	return err == nil
}

// createInPool serves a create whose pool this node's labels do not match: the
// sandbox is pinned to a live matching member, then the create goes there. A create
// forwarded here is answered 421 with the pin's table index (its accepting node
// catches up and retries at the pinned member); one this node accepted itself is
// forwarded from here once this node's table has the pin.
func (s *Server) createInPool(w http.ResponseWriter, r *http.Request, req createSandboxRequest, id string, pool map[string]string) error {
	if id == "" {
		id = newSandboxID()
		req.ID = &id
	}
	p, err := s.pinSandbox(r.Context(), id, pool)
	if err != nil {
		return err
	}
	if hops, _ := hopsOf(r); hops > 0 {
		w.Header().Set(indexHeader, strconv.FormatUint(p.Epoch, 10))
		return errorf(http.StatusMisdirectedRequest, codeUnavailable,
			"sandbox %s is placed in pool %s, on node %s", id, selectorString(pool), p.Node)
	}
	created := false
	defer func() {
		if !created || r.Context().Err() != nil {
			s.unpinFailed(p)
		}
	}()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HoldTimeout)
	err = s.cluster.WaitApplied(ctx, p.Epoch)
	cancel()
	if err != nil {
		return errorf(http.StatusServiceUnavailable, codeUnavailable,
			"sandbox %s was placed on node %s, but this node's table did not reach the placement in time", id, p.Node).retry(holdRetryAfter)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, served, err := s.forwardLoop(w, r, route{pattern: "POST /v1/sandboxes"}, id, &replayBody{buf: b}); served || err != nil {
		created = err == nil && succeeded(w)
		return err
	}
	// The table gives this node the sandbox after all (the pin moved here): create it.
	err = s.createHere(w, r, req, id, pool)
	created = err == nil
	return err
}

// succeeded reports whether the response written to w so far has a 2xx status.
func succeeded(w http.ResponseWriter) bool {
	rec, ok := w.(*statusRecorder)
	return ok && rec.status >= 200 && rec.status < 300
}

// unpinHere drops the pin of sandbox id when this node is its pinned member and
// the create of it here failed (see the top of this file).
func (s *Server) unpinHere(id string) {
	if id == "" {
		return
	}
	a, ok := s.cluster.PinOf(id)
	if !ok || a.Owner != s.cluster.ID() {
		return
	}
	s.unpinFailed(pinJSON{Sandbox: id, Node: string(a.Owner), Epoch: a.Epoch})
}
