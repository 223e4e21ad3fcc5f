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

// nodeIDFor returns the node id of the node whose data directory is dataDir: the
// one kept in dataDir/node-id. A given id (--node-id) is kept there the first time,
// and a random UUID is made there when none is given. A node's id must outlive
// restarts (its sandboxes' cgroups, its place in a cluster, which its raft state in
// dataDir records), so a restart without --node-id resumes the id the directory was
// made with, and a given id other than the kept one is ErrConfig: that node would
// wait for a cluster that no longer knows it. Ids must also differ between nodes
// that share a machine, which the host name does not.
func nodeIDFor(dataDir, given string) (string, error) {
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	kept := strings.TrimSpace(string(b))
	switch {
	case err == nil && kept != "" && given != "" && given != kept:
		return "", fmt.Errorf("%w: the data directory %s belongs to node %q, not %q (give --node-id %s, or leave it out, or use another --data)", ErrConfig, dataDir, kept, given, kept)
	case err == nil && kept != "":
		return kept, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("failed to read node id: %w", err)
	}
	id := given
	if id == "" {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return "", fmt.Errorf("failed to make node id: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		id = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("failed to create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("failed to save node id: %w", err)
	}
	return id, nil
}
