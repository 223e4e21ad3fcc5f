package cluster

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestStableStore: keys survive a reopen, a missing key reads exactly "not found"
// (raft compares the message), and a damaged file refuses to open.
func TestStableStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openStable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v; raft needs exactly \"not found\"", err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing counter: %v", err)
	}
	sets := []struct {
		name string
		key  string
		val  []byte
	}{
		{name: "counter", key: "CurrentTerm", val: u64(7)},
		{name: "counter rewritten", key: "CurrentTerm", val: u64(8)},
		{name: "bytes", key: "LastVoteCand", val: []byte("node-b")},
		{name: "empty value", key: "empty", val: nil},
	}
	for _, tt := range sets {
		if err := s.Set([]byte(tt.key), tt.val); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	s, err = openStable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 8 {
		t.Fatalf("CurrentTerm %d, %v", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || !bytes.Equal(v, []byte("node-b")) {
		t.Fatalf("LastVoteCand %q, %v", v, err)
	}
	if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
		t.Fatalf("empty %q, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(dir, stableName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	path := filepath.Join(dir, stableName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openStable(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged stable store opened: %v", err)
	}
}
