package gateway

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// nodeIDFile holds a node's id in its data directory.
const nodeIDFile = "node-id"

// loadOrCreateNodeID returns the node id kept in dataDir/node-id, making a random
// UUID there the first time. A node's id must outlive restarts (its sandboxes' cgroups,
// its place in a cluster) and differ between nodes that share a machine, which the
// host name does not.
func loadOrCreateNodeID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		return strings.TrimSpace(string(b)), nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("failed to read node id: %w", err)
	}
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("failed to make node id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	id := fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("failed to create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("failed to save node id: %w", err)
	}
	return id, nil
}
