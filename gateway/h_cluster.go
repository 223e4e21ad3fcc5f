package gateway

import (
	_ "embed"
	"net/http"
)

type memberJSON struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels"`
	Status   string            `json:"status"`
	Voter    bool              `json:"voter"`
}

// clusterInfo describes the cluster as this node's replica of the member table
// has it.
func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request) error {
	leader, _ := s.cluster.Leader()
	ms := s.cluster.Members()
	servers, _ := s.cluster.RaftServers() // nil (no voters) if raft is shutting down
	members := make([]memberJSON, 0, len(ms))
	for _, m := range ms {
		members = append(members, memberJSON{
			ID: string(m.ID), RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr,
			Labels: nonNilMap(m.Labels), Status: m.Status.String(), Voter: servers[m.ID],
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

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDoc)
	return err
}
