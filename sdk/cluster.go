package sdk

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Member is one node of the cluster.
type Member struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Status is "alive", "draining" or "down" (a removed member is not listed); it is
	// not sent on join.
	Status string `json:"status,omitempty"`
	// Voter reports that the member votes in raft; the others replicate as
	// non-voters (an extension of the contract). It is not sent on join.
	Voter bool `json:"voter"`
	// Partitions is how many of the cluster's partitions the member owns in the
	// answering node's table (an extension). It is not sent on join.
	Partitions int `json:"partitions"`
	// Pins is how many sandboxes are pinned to the member (placed in a policy's
	// pool) in the answering node's table (an extension). It is not sent on join.
	Pins int `json:"pins,omitempty"`
	// Unmovable lists, for a draining member, the pinned sandboxes its drain cannot
	// move: no alive member matches their pool, so they stay there (an extension).
	Unmovable []string `json:"unmovable,omitempty"`
}

// Cluster is the answer of GET /v1/cluster: the cluster as the answering node's
// replica of the cluster tables has it.
type Cluster struct {
	// Node is the id of the answering node.
	Node string `json:"node"`
	// Leader is the raft leader's id, empty while there is none.
	Leader  string   `json:"leader"`
	Members []Member `json:"members"`
	Term    uint64   `json:"term"`
	// Partitions is the fixed number of partitions sandbox ids hash to (4096), and
	// Unassigned how many of them have no owner (extensions).
	Partitions int `json:"partitions"`
	Unassigned int `json:"unassigned"`
	// AppliedIndex is the last raft index the answering node applied (an extension).
	AppliedIndex uint64 `json:"applied_index"`
	// Lease is the answering node's lease (an extension).
	Lease Lease `json:"lease"`
}

// Lease is a node's lease: it serves its sandboxes only while the lease is valid.
type Lease struct {
	// Valid reports whether the node holds a valid lease now.
	Valid bool `json:"valid"`
	// Until is when the lease it holds, or last held, ends; zero if it never held one.
	Until time.Time `json:"until"`
}

// Voters returns how many members vote in raft.
func (c *Cluster) Voters() int {
	n := 0
	for _, m := range c.Members {
		if m.Voter {
			n++
		}
	}
	return n
}

// GetCluster returns the cluster as the answering node sees it.
func (c *Client) GetCluster(ctx context.Context) (*Cluster, error) {
	out := new(Cluster)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: []string{"v1", "cluster"}}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// JoinCluster adds m (the request is forwarded to the leader): it joins as a
// non-voter and is promoted while the cluster has fewer voters than its target.
// m.Status, m.Voter and m.Partitions are the cluster's to set and are not sent.
func (c *Client) JoinCluster(ctx context.Context, m Member) error {
	body := joinRequest{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Labels: m.Labels}
	_, err := c.do(ctx, request{method: http.MethodPost, path: []string{"v1", "cluster", "join"}, body: body}, nil)
	return err
}

// joinRequest is the body of POST /v1/cluster/join, which refuses unknown fields.
type joinRequest struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// RemoveMember removes the member with this id.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: []string{"v1", "cluster", "members", id}}, nil)
	return err
}

// DrainMember starts draining the member with this id: it returns once the member is
// marked draining, while its sandboxes move to the other members in the background
// (GetCluster shows its status and partitions until it owns none).
func (c *Client) DrainMember(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: []string{"v1", "cluster", "members", id, "drain"}}, nil)
	return err
}

// Whoami is the answer of GET /v1/whoami (an extension of the contract): who the
// client's token speaks for.
type Whoami struct {
	// Tenant is the token's tenant; it owns the sandboxes the token creates.
	Tenant string `json:"tenant"`
	// Admin reports an admin token: it sees every tenant's sandboxes and may change
	// cluster membership.
	Admin bool `json:"admin"`
	// Sandboxes is how many sandboxes the tenant has on the answering node.
	Sandboxes int `json:"sandboxes"`
	// MaxSandboxes is how many it may have (serve's --max-sandboxes-per-tenant); 0
	// means no limit.
	MaxSandboxes int `json:"max_sandboxes"`
}

// Whoami returns who the client's token speaks for.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	out := new(Whoami)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: []string{"v1", "whoami"}}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Healthz checks that the gateway answers (GET /healthz, no auth needed).
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: []string{"healthz"}}, nil)
	return err
}

// maxDocumentBytes bounds what Metrics and OpenAPI read.
const maxDocumentBytes = 64 << 20

// Metrics returns the gateway's metrics in the Prometheus text format (GET /metrics,
// with the client's token). A gateway that serves them on a listener of their own
// (serve --metrics-listen) answers this route 404: read that address instead.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	return c.document(ctx, "metrics")
}

// OpenAPI returns the gateway's API description, an OpenAPI 3 document in JSON (GET
// /v1/openapi.json, no auth needed).
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	return c.document(ctx, "v1", "openapi.json")
}

// document returns the body of a GET of path, up to maxDocumentBytes.
func (c *Client) document(ctx context.Context, path ...string) ([]byte, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sdk: failed to read %s: %w", resp.Request.URL.Path, err)
	}
	if len(b) > maxDocumentBytes {
		return nil, fmt.Errorf("sdk: %s is over %d bytes", resp.Request.URL.Path, maxDocumentBytes)
	}
	return b, nil
}
