package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreateToken returns the token kept in dataDir/token, creating a random one
// (0600) the first time, so `make run` keeps the same token across restarts.
func LoadOrCreateToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "token")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("failed to read token: %w", err)
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("failed to make token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("failed to create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("failed to save token: %w", err)
	}
	return tok, nil
}

// LoadTokens reads a --tokens file (see ParseTokens).
func LoadTokens(path string) (map[string]Principal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read tokens file: %w", err)
	}
	m, err := ParseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("failed to load tokens file %s: %w", path, err)
	}
	return m, nil
}

// ServeTokens builds Config.Tokens from serve's flags: the entries of the --tokens
// file (none when file is ""), and token (--token or $SANDGATE_TOKEN; none when "") as
// an admin of DefaultTenant, with or without a file. A file that gives that same token
// to anyone else is an error, not a silent override.
func ServeTokens(token, file string) (map[string]Principal, error) {
	out := map[string]Principal{}
	if file != "" {
		m, err := LoadTokens(file)
		if err != nil {
			return nil, err
		}
		out = m
	}
	if token == "" {
		return out, nil
	}
	if err := checkTokenText(token); err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	admin := Principal{Tenant: DefaultTenant, Admin: true}
	if p, ok := out[token]; ok && p != admin {
		return nil, fmt.Errorf("tokens file %s gives the --token token to tenant %q; --token is always an admin of tenant %q", file, p.Tenant, DefaultTenant)
	}
	out[token] = admin
	return out, nil
}
