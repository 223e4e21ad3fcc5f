package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// Joining a cluster over HTTP. A node started with Config.Join and no raft state:
//
//  1. asks the seed (any member) for the cluster secret, GET /v1/cluster/secret with
//     its own admin token, and keeps it in DataDir/cluster-secret (0600);
//  2. opens its cluster node with that secret, so the leader's raft can connect to
//     it as soon as it is added;
//  3. asks the seed to add it, POST /v1/cluster/join, which the seed forwards to the
//     leader;
//  4. waits for its first lease.
//
// A node with raft state resumes its cluster with the secret it kept, whether or not
// Join is set: it asks nobody. A node without Join makes a secret the first time.

const (
	// secretFile holds the cluster secret in the data directory.
	secretFile = "cluster-secret"
	// joinTimeout bounds steps 1 and 3, each retried with backoff while the seed
	// cannot be reached or answers 5xx.
	joinTimeout = 60 * time.Second
	// peerTimeout bounds one node-to-node HTTP call.
	peerTimeout = 30 * time.Second
)

// loadOrCreateSecret returns the cluster secret kept in dataDir, making one the first
// time.
func loadOrCreateSecret(dataDir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, secretFile))
	if err == nil {
		return decodeSecret(strings.TrimSpace(string(b)))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("failed to read cluster secret: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("failed to make cluster secret: %w", err)
	}
	return secret, saveSecret(dataDir, secret)
}

func saveSecret(dataDir string, secret []byte) error {
	path := filepath.Join(dataDir, secretFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(base64.StdEncoding.EncodeToString(secret)+"\n"), 0o600); err != nil {
		return fmt.Errorf("failed to save cluster secret: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to save cluster secret: %w", err)
	}
	return nil
}

func decodeSecret(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) < cluster.MinSecretLen {
		return nil, fmt.Errorf("invalid cluster secret: want base64 of at least %d bytes", cluster.MinSecretLen)
	}
	return b, nil
}

// startCluster opens this node's cluster member, joining through Config.Join when
// the data directory has no raft state, and waits until it can serve. It returns the
// node and the cluster secret.
func startCluster(ctx context.Context, c *Config, hooks *clusterHooks) (_ *cluster.Node, secret []byte, err error) {
	has, err := cluster.HasState(c.DataDir)
	if err != nil {
		return nil, nil, err
	}
	hooks.joining = c.Join != "" && !has
	var seed *seedClient
	if hooks.joining {
		if seed, err = newSeedClient(c); err != nil {
			return nil, nil, err
		}
		defer seed.client.CloseIdleConnections()
		if secret, err = seed.secret(ctx); err != nil {
			return nil, nil, fmt.Errorf("failed to join the cluster through %s: %w", c.Join, err)
		}
		if err := saveSecret(c.DataDir, secret); err != nil {
			return nil, nil, err
		}
	} else if secret, err = loadOrCreateSecret(c.DataDir); err != nil {
		return nil, nil, err
	}
	cn, err := openCluster(ctx, c, hooks, secret)
	if err != nil {
		return nil, nil, err
	}
	if hooks.joining {
		err = seed.join(ctx, cn.Self())
	}
	if err == nil {
		err = waitClusterReady(ctx, cn, hooks)
	}
	if err != nil {
		_ = cn.Close()
		if hooks.joining {
			return nil, nil, fmt.Errorf("failed to join the cluster through %s: %w", c.Join, err)
		}
		return nil, nil, fmt.Errorf("failed to start the cluster node: %w", err)
	}
	return cn, secret, nil
}

// seedClient calls the member a joining node was pointed at.
type seedClient struct {
	base   string // http://host:port
	token  string // this node's admin token
	client *http.Client
}

func newSeedClient(c *Config) (*seedClient, error) {
	base := strings.TrimRight(c.Join, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("gateway: --join %q: want host:port or http://host:port", c.Join)
	}
	tok := adminToken(c.Tokens)
	if tok == "" {
		return nil, errors.New("gateway: --join needs an admin token the cluster accepts (--token, or an admin in --tokens)")
	}
	return &seedClient{base: base, token: tok, client: &http.Client{Transport: &http.Transport{}, Timeout: peerTimeout}}, nil
}

// adminToken returns one admin token of tokens (the first in sort order, so a
// restart picks the same), or "".
func adminToken(tokens map[string]Principal) string {
	var admins []string
	for tok, p := range tokens {
		if p.Admin {
			admins = append(admins, tok)
		}
	}
	sort.Strings(admins)
	if len(admins) == 0 {
		return ""
	}
	return admins[0]
}

func (s *seedClient) secret(ctx context.Context) ([]byte, error) {
	var out secretJSON
	if err := s.call(ctx, "GET", "/v1/cluster/secret", nil, &out); err != nil {
		return nil, fmt.Errorf("failed to get the cluster secret from %s: %w", s.base, err)
	}
	return decodeSecret(out.Secret)
}

func (s *seedClient) join(ctx context.Context, m cluster.Member) error {
	body := joinRequest{ID: string(m.ID), RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Labels: m.Labels}
	if err := s.call(ctx, "POST", "/v1/cluster/join", body, nil); err != nil {
		return fmt.Errorf("failed to ask %s to add this node: %w", s.base, err)
	}
	return nil
}

// call sends one request to the seed, retrying with backoff within joinTimeout while
// the seed cannot be reached or answers 5xx, or 409: a live member still has this
// node's id at other addresses (this node's earlier self, restarted elsewhere, until
// its lease runs out). Another 4xx is final: a wrong token, a bad request.
func (s *seedClient) call(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	wait := 100 * time.Millisecond
	for {
		err := s.once(ctx, method, path, body, out)
		var final *peerError
		if err == nil || (errors.As(err, &final) && final.status < 500 && final.status != http.StatusConflict) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func (s *seedClient) once(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &peerError{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// peerError is another node's error answer.
type peerError struct {
	status int
	body   string
}

func (e *peerError) Error() string {
	msg := e.body
	var eb errorBody
	if json.Unmarshal([]byte(e.body), &eb) == nil && eb.Error.Message != "" {
		msg = eb.Error.Code + ": " + eb.Error.Message
	}
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), msg)
}

type secretJSON struct {
	Secret string `json:"secret"`
}

type joinRequest struct {
	ID       string            `json:"id"`
	RaftAddr string            `json:"raft_addr"`
	HTTPAddr string            `json:"http_addr"`
	Labels   map[string]string `json:"labels,omitempty"`
}
