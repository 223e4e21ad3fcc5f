package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Config configures Start. The zero value (or nil) starts three nodes.
type Config struct {
	// Nodes is how many nodes to start; 0 means 3.
	Nodes int
	// Token is the API token every node gets with --token; "" means
	// "clustertest-token".
	Token string
	// Args are extra serve flags, given to every node after the harness's own.
	Args []string
	// StartTimeout bounds the wait for a node to log that it listens, and the wait
	// for node 1 to list every member; 0 means 60 s (a loaded machine).
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it kills; 0 means 30 s.
	StopTimeout time.Duration
	// Binary is the sandgate executable the nodes run; "" means the one Binary builds
	// from this tree. A benchmark sets it to compare another build in the same run.
	Binary string
}

// Cluster is a set of serve processes started by Start. Its fields do not change
// after Start; its methods are safe for concurrent use.
type Cluster struct {
	// Nodes are the nodes in the order they were started; Nodes[0] is n1.
	Nodes []*Node
	// Token is the API token of every node.
	Token string

	tb     testing.TB
	cfg    Config
	client *http.Client
}

// Start starts a cluster for tb and registers its end with tb.Cleanup: every node
// and everything it started is killed and reaped, and when tb has failed the end of
// each node's log is printed. A node that cannot start fails tb. cfg nil means the
// defaults.
func Start(tb testing.TB, cfg *Config) *Cluster {
	tb.Helper()
	c, err := start(tb, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// start is Start returning its error.
func start(tb testing.TB, cfg *Config) (*Cluster, error) {
	tb.Helper()
	c := &Cluster{tb: tb, cfg: withDefaults(cfg)}
	c.Token = c.cfg.Token
	// A connection per request: net/http retries a GET on a reused connection that
	// broke after the request was written, and the retry's "connection refused" (the
	// node died) would hide that the first attempt reached the server. Tests tell
	// "surely not applied" from "maybe applied" by that error.
	tr := &http.Transport{DisableKeepAlives: true}
	c.client = &http.Client{Transport: tr}
	tb.Cleanup(tr.CloseIdleConnections) // registered first: runs after the nodes stop
	if c.cfg.Binary == "" {
		c.cfg.Binary = Binary(tb)
	}
	logs := tb.TempDir()
	for i := range c.cfg.Nodes {
		n := &Node{ID: "n" + strconv.Itoa(i+1), DataDir: tb.TempDir(), c: c}
		n.LogPath = filepath.Join(logs, n.ID+".log")
		n.HTTPAddr, n.RaftAddr = FreeAddr(tb), FreeAddr(tb)
		n.args = []string{"serve", "--listen", n.HTTPAddr, "--raft-listen", n.RaftAddr,
			"--data", n.DataDir, "--node-id", n.ID, "--token", c.Token, "--disk-images=false"}
		if rt := os.Getenv("SANDGATE_TEST_RUNTIME"); rt != "" {
			n.args = append(n.args, "--runtime", rt)
		}
		if i > 0 {
			n.args = append(n.args, "--join", c.Nodes[0].HTTPAddr)
		}
		n.args = append(n.args, c.cfg.Args...)
		c.Nodes = append(c.Nodes, n)
		tb.Cleanup(func() {
			if err := n.stop(false); err != nil {
				tb.Error(err)
			}
			if tb.Failed() {
				tb.Logf("clustertest: log of node %s (%s), last %d lines:\n%s", n.ID, n.LogPath, tailLines, tail(n.Log(), tailLines))
			}
		})
	}
	for _, n := range c.Nodes {
		if err := n.start(); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, tail(n.Log(), tailLines))
		}
	}
	if len(c.Nodes) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
		defer cancel()
		if err := c.WaitMembers(ctx, c.Nodes[0], len(c.Nodes)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func withDefaults(cfg *Config) Config {
	c := Config{}
	if cfg != nil {
		c = *cfg
		c.Args = append([]string(nil), cfg.Args...)
	}
	if c.Nodes <= 0 {
		c.Nodes = 3
	}
	if c.Token == "" {
		c.Token = "clustertest-token"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 30 * time.Second
	}
	return c
}

// Node returns the node with the given id, or nil.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Running returns the nodes whose process runs.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Info is the answer of GET /v1/cluster.
type Info struct {
	Node    string   `json:"node"`
	Leader  string   `json:"leader"`
	Term    uint64   `json:"term"`
	Members []Member `json:"members"`
}

// Member is one member in Info.
type Member struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels"`
	Status   string            `json:"status"`
}

// Info asks n for GET /v1/cluster.
func (c *Cluster) Info(ctx context.Context, n *Node) (Info, error) {
	var info Info
	resp, err := n.Do(ctx, "GET", "/v1/cluster", nil)
	if err == nil {
		err = resp.JSON(http.StatusOK, &info)
	}
	return info, err
}

// WaitMembers waits until n lists want members, all alive, and a leader; it asks
// again each time an answer falls short, until ctx ends.
func (c *Cluster) WaitMembers(ctx context.Context, n *Node, want int) error {
	var last string
	for {
		info, err := c.Info(ctx, n)
		alive := 0
		for _, m := range info.Members {
			if m.Status == "alive" {
				alive++
			}
		}
		if err == nil && alive == want && len(info.Members) == want && info.Leader != "" {
			return nil
		}
		last = fmt.Sprintf("%+v %v", info, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("failed to see %d members alive on %s: last answer %s: %w", want, n.ID, last, ctx.Err())
		case <-time.After(100 * time.Millisecond): // membership has no event to wait on over HTTP
		}
	}
}

// CreateWhere creates sandboxes prefix-0, prefix-1, ... through the first node until
// one lands on a node for which want is true, and returns its ID and that node. A 503
// (its partition is moving, as in the rebalance after the joins) asks again with the
// same ID; ctx ending fails tb.
func (c *Cluster) CreateWhere(ctx context.Context, tb testing.TB, prefix string, want func(node string) bool) (string, *Node) {
	tb.Helper()
	for i := 0; ; i++ {
		if ctx.Err() != nil {
			tb.Fatalf("no sandbox %s-N landed where wanted", prefix)
		}
		id := fmt.Sprintf("%s-%d", prefix, i)
		var got struct{ Node string }
		resp, err := c.Nodes[0].Do(ctx, "POST", "/v1/sandboxes", map[string]string{"id": id})
		if err == nil && resp.Status == http.StatusServiceUnavailable {
			i--
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil || resp.JSON(http.StatusCreated, &got) != nil {
			tb.Fatalf("create %s: %v %+v", id, err, resp)
		}
		if n := c.Node(got.Node); n != nil && want(got.Node) {
			return id, n
		}
	}
}
