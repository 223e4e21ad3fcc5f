package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// The membership routes. Membership changes run on the raft leader: a node that is
// not the leader forwards the request there, over HTTP with the caller's own token
// (every node accepts the same tokens), so node-to-node HTTP needs no secret of its
// own.

const (
	// leaderHopsHeader counts how many times a membership request was forwarded to
	// a leader; past maxLeaderHops it is refused (leadership moving in a loop).
	leaderHopsHeader = "Sandgate-Leader-Hops"
	maxLeaderHops    = 3
	// leaderWait bounds how long a membership request waits for a leader to be
	// known before it is answered 503.
	leaderWait = 5 * time.Second
	// membershipTimeout bounds one membership change on the leader.
	membershipTimeout = 30 * time.Second
)

func errNoLeader() *apiError {
	return &apiError{
		Status: http.StatusServiceUnavailable, Code: codeUnavailable,
		Message: "the cluster has no leader right now (an election, or no quorum)", RetryAfter: time.Second,
	}
}

// clusterJoin adds a member. Only an admin token may change membership: that is
// checked before anything else.
func (s *Server) clusterJoin(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change cluster membership"); err != nil {
		return err
	}
	body, err := readJSONBody(r, maxJSONBody)
	if err != nil {
		return err
	}
	var req joinRequest
	if err := decodeJSONBytes(body, &req); err != nil {
		return err
	}
	if req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "" {
		return badRequest("id, raft_addr and http_addr are required")
	}
	if !runtime.ValidID(req.ID) { // the member routes address it by id
		return badRequest("invalid member id %q: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", req.ID)
	}
	if err := checkMemberAddrs(req.RaftAddr, req.HTTPAddr); err != nil {
		return err
	}
	if err := checkLabels(req.Labels); err != nil { // kept in the replicated member table
		return err
	}
	m := cluster.Member{ID: cluster.NodeID(req.ID), RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Labels: req.Labels}
	done, err := s.onLeader(w, r, body, func(ctx context.Context) error { return s.cluster.Join(ctx, m) })
	if err != nil || done {
		return err
	}
	return s.clusterInfo(w, r)
}

// clusterRemove removes a member; admin tokens only, checked first. Removing a
// member that has left already is 204 again; an id that never was one is 404.
func (s *Server) clusterRemove(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change cluster membership"); err != nil {
		return err
	}
	id := cluster.NodeID(r.PathValue("id"))
	done, err := s.onLeader(w, r, nil, func(ctx context.Context) error {
		if s.cluster.IsLeader() && !s.isMember(id) {
			return notFound("no member %s in the cluster", id)
		}
		return s.cluster.Remove(ctx, id)
	})
	if err != nil || done {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// clusterDrain starts draining a member (admin tokens only, checked first): it is
// marked draining and the leader hands its partitions to the other members, each
// by a planned move. The answer is 202 once the member is marked; GET /v1/cluster
// shows its status and partitions until none is left. Draining a member already
// draining is 202 again; an id that is not an alive or draining member is 404. It
// takes no body: an empty one or {} (a client that always sends JSON), nothing else.
func (s *Server) clusterDrain(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change cluster membership"); err != nil {
		return err
	}
	body, err := readJSONBody(r, maxJSONBody)
	if err != nil {
		return err
	}
	if err := decodeJSONBytes(body, &struct{}{}); err != nil {
		return err
	}
	id := cluster.NodeID(r.PathValue("id"))
	done, err := s.onLeader(w, r, body, func(ctx context.Context) error { return s.cluster.Drain(ctx, id) })
	if err != nil || done {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// isMember reports whether id is or was a member (one that has left included, so
// that a removal retried after a leader change is 204 again, not 404), or is a raft
// server: the raft configuration comes from the log, so a leader elected a moment
// ago knows a member its table has not applied yet.
func (s *Server) isMember(id cluster.NodeID) bool {
	for _, m := range s.cluster.Members() {
		if m.ID == id {
			return true
		}
	}
	servers, err := s.cluster.RaftServers()
	if err != nil {
		return true // let Remove decide
	}
	_, ok := servers[id]
	return ok
}

// clusterSecret hands the cluster secret to a joining node (admin tokens only): an
// admin may add nodes anyway, and a node needs the secret to take part.
func (s *Server) clusterSecret(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "read the cluster secret"); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, secretJSON{Secret: base64.StdEncoding.EncodeToString(s.secret)})
	return nil
}

// onLeader runs op here when this node leads. Otherwise it forwards the request (with
// body, already read) to the leader and relays its answer, reporting done; while no
// leader is known it retries op for up to leaderWait, then answers 503.
func (s *Server) onLeader(w http.ResponseWriter, r *http.Request, body []byte, op func(context.Context) error) (done bool, err error) {
	ctx, cancel := context.WithTimeout(r.Context(), membershipTimeout)
	defer cancel()
	deadline := time.Now().Add(leaderWait)
	wait := 20 * time.Millisecond
	for {
		err := op(ctx)
		nl, ok := cluster.LeaderOf(err)
		if !ok {
			return false, err
		}
		if nl.LeaderID != "" && string(nl.LeaderID) != s.cfg.NodeID && nl.HTTPAddr != "" {
			return true, s.forwardToLeader(w, r, nl, body)
		}
		if time.Now().After(deadline) {
			return false, errNoLeader()
		}
		select {
		case <-ctx.Done():
			return false, errNoLeader()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// forwardToLeader sends r (with body) to the leader named by nl and copies its
// answer to w.
func (s *Server) forwardToLeader(w http.ResponseWriter, r *http.Request, nl *cluster.NotLeaderError, body []byte) error {
	hops, _ := strconv.Atoi(r.Header.Get(leaderHopsHeader))
	if hops >= maxLeaderHops {
		return errNoLeader()
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+nl.HTTPAddr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	req.Header.Set(leaderHopsHeader, strconv.Itoa(hops+1))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.peers.Do(req)
	if err != nil {
		s.log.Warn("failed to forward a membership request to the leader", "leader", nl.LeaderID, "addr", nl.HTTPAddr, "err", err)
		return errNoLeader()
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Retry-After", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, resp.Body)
	if err != nil {
		s.log.Warn("failed to relay the leader's answer", "err", err)
	}
	return nil
}
