package gateway

import (
	_ "embed"
	"net/http"
	"time"
)

type memberJSON struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels"`
	Status   string            `json:"status"`
}

// clusterInfo describes the cluster as this node's replica of the member table
// has it.
func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request) error {
	leader, _ := s.cluster.Leader()
	ms := s.cluster.Members()
	members := make([]memberJSON, 0, len(ms))
	for _, m := range ms {
		members = append(members, memberJSON{
			ID: string(m.ID), RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr,
			Labels: nonNilMap(m.Labels), Status: m.Status.String(),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"node":    s.cfg.NodeID,
		"leader":  string(leader),
		"members": members,
		"term":    s.cluster.Term(),
	})
	return nil
}

var errNoCluster = &apiError{
	Status: http.StatusServiceUnavailable, Code: codeUnavailable,
	Message:    "this node runs without clustering: membership cannot change",
	RetryAfter: time.Minute,
}

// clusterJoin adds a member. Only an admin token may change membership: that is
// checked before anything else.
func (s *Server) clusterJoin(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change cluster membership"); err != nil {
		return err
	}
	var req struct {
		ID       string            `json:"id"`
		RaftAddr string            `json:"raft_addr"`
		HTTPAddr string            `json:"http_addr"`
		Labels   map[string]string `json:"labels"`
	}
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "" {
		return badRequest("id, raft_addr and http_addr are required")
	}
	return errNoCluster
}

// clusterRemove removes a member; admin tokens only, checked first.
func (s *Server) clusterRemove(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change cluster membership"); err != nil {
		return err
	}
	return errNoCluster
}

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDoc)
	return err
}
