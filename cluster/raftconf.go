package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// RaftServers returns the raft configuration this node knows, the latest one even if
// not yet committed: every server's id, true for voters and false for non-voters. It
// comes from the log, so a new leader knows it before its member table has caught
// up.
func (n *Node) RaftServers() (map[NodeID]bool, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("failed to read the raft configuration: %w", err)
	}
	out := map[NodeID]bool{}
	for _, s := range f.Configuration().Servers {
		out[NodeID(s.ID)] = s.Suffrage == raft.Voter
	}
	return out, nil
}

// HasState reports whether dataDir holds raft state (a log, a term or a snapshot):
// a node opened on it resumes its cluster whatever Config.Join says, so a joining
// gateway asks a member to add it only when this is false. It must not be called
// while a Node has dataDir open.
func HasState(dataDir string) (bool, error) {
	has, err := hasState(dataDir)
	if err != nil {
		return false, fmt.Errorf("failed to read raft state: %w", err)
	}
	return has, nil
}

func hasState(dataDir string) (bool, error) {
	dir := filepath.Join(dataDir, "raft")
	var store raftStore
	if _, err := os.Stat(filepath.Join(dir, walDir)); err == nil {
		w, err := openWAL(filepath.Join(dir, walDir), slog.New(slog.DiscardHandler), 0)
		if err != nil {
			return false, err
		}
		store = w
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	} else if _, err := os.Stat(filepath.Join(dir, boltLogName)); err == nil {
		// A data directory of an older build, migrated when a node opens it.
		if store, err = openLogStore(filepath.Join(dir, boltLogName)); err != nil {
			return false, err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else {
		return false, err
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.New(&hclog.LoggerOptions{Output: io.Discard}))
	if err != nil {
		return false, err
	}
	return raft.HasExistingState(store, store, snaps)
}
