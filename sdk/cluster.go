package sdk

import (
	"context"
	"net/http"
)

// Member is one node of the cluster.
type Member struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Status is "alive" or "down"; it is not sent on join.
	Status string `json:"status,omitempty"`
}

// Cluster is the answer of GET /v1/cluster.
type Cluster struct {
	Node    string   `json:"node"`
	Leader  string   `json:"leader"`
	Members []Member `json:"members"`
	Term    uint64   `json:"term"`
}

// GetCluster returns the cluster as the answering node sees it.
func (c *Client) GetCluster(ctx context.Context) (*Cluster, error) {
	out := new(Cluster)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: []string{"v1", "cluster"}}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// JoinCluster adds m as a voter (the request is forwarded to the leader). m.Status is
// ignored.
func (c *Client) JoinCluster(ctx context.Context, m Member) error {
	m.Status = ""
	_, err := c.do(ctx, request{method: http.MethodPost, path: []string{"v1", "cluster", "join"}, body: m}, nil)
	return err
}

// RemoveMember removes the member with this id.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: []string{"v1", "cluster", "members", id}}, nil)
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
