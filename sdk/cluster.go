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

// Healthz checks that the gateway answers (GET /healthz, no auth needed).
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: []string{"healthz"}}, nil)
	return err
}
