package cluster

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLogStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("k")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v; raft needs exactly \"not found\"", err)
	}
	if i, _ := s.LastIndex(); i != 0 {
		t.Fatalf("empty store LastIndex %d", i)
	}
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 300; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: i / 100, Type: raft.LogCommand, Data: []byte{byte(i)}, AppendedAt: at})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 255); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("term"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = openLogStore(path) // everything survives a reopen
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 256 || last != 300 {
		t.Fatalf("indexes %d..%d, want 256..300 (big-endian keys keep index order past 255)", first, last)
	}
	var l raft.Log
	if err := s.GetLog(255, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry: %v", err)
	}
	if err := s.GetLog(299, &l); err != nil {
		t.Fatal(err)
	}
	if l.Index != 299 || l.Term != 2 || l.Type != raft.LogCommand || !bytes.Equal(l.Data, []byte{byte(299 % 256)}) || !l.AppendedAt.Equal(at) {
		t.Fatalf("entry 299 read back as %+v", l)
	}
	if v, err := s.GetUint64([]byte("term")); err != nil || v != 7 {
		t.Fatalf("stable term %d, %v", v, err)
	}
}
