package gateway

import (
	_ "embed"
	"net/http"
	"slices"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

type memberJSON struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels"`
	Status   string            `json:"status"`
}

// clusterMemberJSON is a member as GET /v1/cluster shows it: the member record, its
// raft suffrage, its share of the partition table and the sandboxes pinned to it, as
// this node knows them. Unmovable lists, for a draining member, the pinned
// sandboxes no alive member's labels match: the drain leaves them there.
type clusterMemberJSON struct {
	memberJSON
	Voter      bool     `json:"voter"`
	Partitions int      `json:"partitions"`
	Pins       int      `json:"pins"`
	Unmovable  []string `json:"unmovable"`
}

// leaseJSON is this node's lease: whether it may serve its sandboxes now, and until
// when (null if it never held one).
type leaseJSON struct {
	Valid bool       `json:"valid"`
	Until *time.Time `json:"until"`
}

// clusterJSON is the ClusterInfo object of the API.
type clusterJSON struct {
	Node         string              `json:"node"`
	Leader       *string             `json:"leader"` // null while there is none
	Members      []clusterMemberJSON `json:"members"`
	Term         uint64              `json:"term"`
	Partitions   int                 `json:"partitions"`
	Unassigned   int                 `json:"unassigned"`
	AppliedIndex uint64              `json:"applied_index"`
	Lease        leaseJSON           `json:"lease"`
}

// clusterInfo describes the cluster as this node's replica of the member table
// has it (see clusterState).
func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request) error {
	st := s.clusterState()
	// Unmovable names sandboxes: a tenant sees only its own, as on every list.
	if who := principalOf(r.Context()); !who.Admin {
		for i := range st.Members {
			st.Members[i].Unmovable = slices.DeleteFunc(st.Members[i].Unmovable, func(id string) bool {
				owner, ok := s.node.SandboxTenant(id)
				return !ok || !who.sees(owner)
			})
		}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// clusterState is the ClusterInfo object of the API (also the answer of a join):
// the members with the raft suffrage of each and the partitions it owns, and this
// node's applied index and lease. Every part is read without waiting on raft, so a
// node without quorum still answers, with what it last applied.
func (s *Server) clusterState() clusterJSON {
	c := s.cluster
	out := clusterJSON{
		Node: s.cfg.NodeID, Term: c.Term(), Partitions: cluster.Partitions,
		AppliedIndex: c.AppliedIndex(),
	}
	if leader, _ := c.Leader(); leader != "" {
		l := string(leader)
		out.Leader = &l
	}
	voters, spread, pins := c.Voters(), c.Spread(), c.Pinned()
	out.Unassigned = spread[""]
	ms := c.Members()
	out.Members = make([]clusterMemberJSON, 0, len(ms))
	for _, m := range ms {
		if m.Status == cluster.StatusLeft {
			continue // removed: no longer a member (the table keeps it to refuse its return)
		}
		out.Members = append(out.Members, clusterMemberJSON{
			memberJSON: memberJSON{
				ID: string(m.ID), RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr,
				Labels: nonNilMap(m.Labels), Status: m.Status.String(),
			},
			Voter: voters[m.ID], Partitions: spread[m.ID], Pins: pins[m.ID],
			Unmovable: nonNilSlice(c.Unmovable(m.ID)),
		})
	}
	valid, until := c.Lease()
	out.Lease.Valid = valid
	if !until.IsZero() {
		u := until.UTC().Truncate(time.Millisecond)
		out.Lease.Until = &u
	}
	return out
}

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDoc)
	return err
}
