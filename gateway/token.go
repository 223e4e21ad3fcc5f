package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

// LoadTokens reads a --tokens file: a JSON object mapping tokens to tenant names.
func LoadTokens(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read tokens file: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("failed to parse tokens file %s (want {\"token\": \"tenant\"}): %w", path, err)
	}
	for tok, tenant := range m {
		if tok == "" || tenant == "" {
			return nil, fmt.Errorf("tokens file %s: tokens and tenant names must not be empty", path)
		}
	}
	return m, nil
}
