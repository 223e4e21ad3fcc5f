package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// Cluster-wide API tokens. Every node accepts the same tokens: the cluster's
// replicated key/value table holds, under "token/<hex SHA-256 of the token>", the
// principal of each token (its tenant and whether it is an admin's), so no node
// stores another node's tokens in clear.
//
//   - At start, once it holds a lease, a node adds the tokens of its own
//     configuration (--token, --tokens) to the table: the cluster's tokens are the
//     union of every node's. A token the table already gives to another principal is
//     overwritten, with a warning: the node started last with a token decides who it
//     speaks for, everywhere, as a user editing a tokens file and restarting expects.
//   - A token accepted by one node is accepted by every node once the entry commits.
//   - A node accepts its own configured tokens even before the table has them (a
//     joining node); where the table names another principal for one, the table wins.
//   - Tokens are never removed from the table by a restart: dropping a token from a
//     tokens file does not revoke it cluster-wide (there is no revocation yet).

const tokenKeyPrefix = "token/"

// tokenPublishTimeout bounds how long a starting node tries to add its tokens.
const tokenPublishTimeout = 60 * time.Second

func tokenKey(sum [32]byte) string { return tokenKeyPrefix + hex.EncodeToString(sum[:]) }

type tokenValue struct {
	Tenant string `json:"tenant"`
	Admin  bool   `json:"admin,omitempty"`
}

// refresh rebuilds the table from the cluster's replicated tokens and this node's
// own. It runs on the cluster's apply goroutine (OnValues) and at start.
func (t *tokenTable) refresh(replicated map[string][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[[32]byte]Principal, len(replicated)+len(t.local))
	for k, v := range t.local {
		m[k] = v
	}
	for k, v := range replicated {
		sum, err := hex.DecodeString(strings.TrimPrefix(k, tokenKeyPrefix))
		var tv tokenValue
		if err != nil || len(sum) != sha256.Size || json.Unmarshal(v, &tv) != nil || tv.Tenant == "" {
			continue // written by no version of this gateway; ignore rather than fail
		}
		m[[32]byte(sum)] = Principal(tv)
	}
	t.cur.Store(&m)
}

// missing returns the entries of this node's tokens that the replicated table lacks
// or gives to another principal.
func (t *tokenTable) missing(replicated func(key string) ([]byte, bool)) []tokenEntryJSON {
	var out []tokenEntryJSON
	for sum, who := range t.local {
		want, _ := json.Marshal(tokenValue(who))
		if have, ok := replicated(tokenKey(sum)); ok && string(have) == string(want) {
			continue
		}
		out = append(out, tokenEntryJSON{SHA256: hex.EncodeToString(sum[:]), Tenant: who.Tenant, Admin: who.Admin})
	}
	return out
}

// tokenEntryJSON is one token of POST /v1/cluster/tokens: its SHA-256, not its text.
type tokenEntryJSON struct {
	SHA256 string `json:"sha256"`
	Tenant string `json:"tenant"`
	Admin  bool   `json:"admin,omitempty"`
}

type tokensRequest struct {
	Tokens []tokenEntryJSON `json:"tokens"`
}

// values turns entries into key/value pairs, checking each.
func (req *tokensRequest) values() (map[string][]byte, error) {
	if len(req.Tokens) == 0 {
		return nil, badRequest("tokens: at least one entry is required")
	}
	kv := make(map[string][]byte, len(req.Tokens))
	for i, e := range req.Tokens {
		sum, err := hex.DecodeString(e.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return nil, badRequest("tokens[%d].sha256: want 64 hex digits", i)
		}
		if err := checkTenantName(fmt.Sprintf("tokens[%d]", i), e.Tenant); err != nil {
			return nil, badRequest("%v", err)
		}
		v, _ := json.Marshal(tokenValue{Tenant: e.Tenant, Admin: e.Admin})
		kv[tokenKey([32]byte(sum))] = v
	}
	return kv, nil
}

// clusterTokens adds tokens (by their SHA-256) to the cluster's table; admin tokens
// only, checked first. Nodes call it at start with their configured tokens; it is
// forwarded to the leader.
func (s *Server) clusterTokens(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "add cluster tokens"); err != nil {
		return err
	}
	body, err := readJSONBody(r, maxJSONBody)
	if err != nil {
		return err
	}
	var req tokensRequest
	if err := decodeJSONBytes(body, &req); err != nil {
		return err
	}
	kv, err := req.values()
	if err != nil {
		return err
	}
	done, err := s.onLeader(w, r, body, func(ctx context.Context) error { return s.cluster.SetValues(ctx, kv) })
	if err != nil || done {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// publishTokens adds this node's configured tokens to the cluster's table: directly
// when it leads, else through the leader's POST /v1/cluster/tokens with this node's
// admin token. It retries within tokenPublishTimeout while there is no leader.
func publishTokens(ctx context.Context, c *Config, cn *cluster.Node, t *tokenTable) error {
	entries := t.missing(cn.Value)
	if len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		if v, ok := cn.Value(tokenKeyPrefix + e.SHA256); ok {
			var old tokenValue
			_ = json.Unmarshal(v, &old)
			c.Logger.Warn("a configured token changes principal cluster-wide", "token_sha256", e.SHA256[:12],
				"old_tenant", old.Tenant, "old_admin", old.Admin, "tenant", e.Tenant, "admin", e.Admin)
		}
	}
	req := tokensRequest{Tokens: entries}
	kv, err := req.values()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, tokenPublishTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		err := cn.SetValues(ctx, kv)
		nl, notLeader := cluster.LeaderOf(err)
		switch {
		case err == nil:
			return nil
		case notLeader && nl.HTTPAddr != "":
			return postTokens(ctx, c, nl.HTTPAddr, req)
		case !notLeader && !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("failed to add this node's tokens: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failed to add this node's tokens: no leader within %v", tokenPublishTimeout)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// postTokens sends req to the leader at addr with this node's admin token.
func postTokens(ctx context.Context, c *Config, addr string, req tokensRequest) error {
	tok := adminToken(c.Tokens)
	if tok == "" {
		return errors.New("failed to add this node's tokens: it is not the leader and has no admin token to ask the leader with")
	}
	seed := &seedClient{base: "http://" + addr, token: tok, client: &http.Client{Transport: &http.Transport{}, Timeout: peerTimeout}}
	defer seed.client.CloseIdleConnections()
	if err := seed.call(ctx, "POST", "/v1/cluster/tokens", req, nil); err != nil {
		return fmt.Errorf("failed to add this node's tokens through the leader at %s: %w", addr, err)
	}
	return nil
}
