package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// TestWALMigrate migrates the bbolt store of a real node (raft's own entries and
// stable keys): cleanly, after a crash while the WAL was being built, and after a
// crash between its rename and raft.db's; a log with a gap refuses and keeps
// raft.db. The node then resumes on the migrated log with its records.
func TestWALMigrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig("solo", dir, "127.0.0.1:0", false)
	cfg.boltLog = true
	n := openNode(t, cfg)
	waitFor(t, "the node to lead with its partitions placed", func() bool { return n.IsLeader() && placed(n, n) })
	sbs := sandboxIDs(10)
	for i, sb := range sbs {
		mustWrite(t, n, sb, "k", fmt.Sprint(i))
	}
	addr := n.RaftAddr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	bolted := filepath.Join(dir, "raft", boltLogName)
	src, err := os.ReadFile(bolted)
	if err != nil {
		t.Fatal(err)
	}
	if has, err := HasState(dir); err != nil || !has {
		t.Fatalf("HasState of a bbolt store: %v, %v", has, err)
	}

	tests := []struct {
		name    string
		crash   func(t *testing.T, raftDir string) // the state a crash left
		wantErr error
	}{
		{name: "clean"},
		{name: "crash while building the WAL", crash: func(t *testing.T, raftDir string) {
			tmp := filepath.Join(raftDir, walDir+".tmp")
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, segmentName(1)), []byte("half a segment"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "crash before raft.db was renamed", crash: func(t *testing.T, raftDir string) {
			if err := buildWAL(raftDir, discard); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a gap in the bbolt log", wantErr: errWALOrder, crash: func(t *testing.T, raftDir string) {
			s, err := openLogStore(filepath.Join(raftDir, boltLogName))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLogs).Delete(u64(3)) })
			if err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raftDir := filepath.Join(t.TempDir(), "raft")
			if err := os.Mkdir(raftDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(raftDir, boltLogName), src, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.crash != nil {
				tt.crash(t, raftDir)
			}
			want, err := openLogStore(filepath.Join(raftDir, boltLogName))
			if err != nil {
				t.Fatal(err)
			}
			wantFirst, _ := want.FirstIndex()
			wantLast, _ := want.LastIndex()
			want.Close()

			s, err := openRaftStore(raftDir, discard, false)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("migration: %v, want %v", err, tt.wantErr)
				}
				if _, err := os.Stat(filepath.Join(raftDir, boltLogName)); err != nil {
					t.Fatalf("raft.db after a failed migration: %v", err)
				}
				if _, err := os.Stat(filepath.Join(raftDir, walDir)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("wal after a failed migration: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := os.Stat(filepath.Join(raftDir, boltLogName)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("raft.db left after the migration: %v", err)
			}
			old, err := openLogStore(filepath.Join(raftDir, boltLogName+migratedExt))
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			sameStores(t, old, s.(*wal), wantFirst, wantLast)
		})
	}

	m := solo(t, dir, addr, nil)
	caughtUp(t, m)
	for i, sb := range sbs {
		if got := get(t, m, sb, "k"); got != fmt.Sprint(i) {
			t.Errorf("%s after the migration: k=%q, want %d", sb, got, i)
		}
	}
	mustWrite(t, m, sbs[0], "k", "after")
	if _, err := os.Stat(filepath.Join(dir, "raft", walDir)); err != nil {
		t.Fatalf("the node runs without a WAL: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if has, err := HasState(dir); err != nil || !has {
		t.Fatalf("HasState of a migrated store: %v, %v", has, err)
	}
}

// sameStores fails unless w holds every entry first..last and every stable key of
// the bbolt store old.
func sameStores(t *testing.T, old *logStore, w *wal, first, last uint64) {
	t.Helper()
	if f, _ := w.FirstIndex(); f != first {
		t.Fatalf("first index %d, want %d", f, first)
	}
	if l, _ := w.LastIndex(); l != last || last < 3 {
		t.Fatalf("last index %d, want %d (3 or more)", l, last)
	}
	for i := first; i <= last; i++ {
		var a, b raft.Log
		if err := errors.Join(old.GetLog(i, &a), w.GetLog(i, &b)); err != nil {
			t.Fatal(err)
		}
		if a.Index != b.Index || a.Term != b.Term || a.Type != b.Type || !bytes.Equal(a.Data, b.Data) ||
			!bytes.Equal(a.Extensions, b.Extensions) || !a.AppendedAt.Equal(b.AppendedAt) {
			t.Fatalf("entry %d migrated as %+v, was %+v", i, b, a)
		}
	}
	keys := 0
	err := old.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConf).ForEach(func(k, v []byte) error {
			keys++
			got, err := w.Get(k)
			if err != nil || !bytes.Equal(got, v) {
				return fmt.Errorf("stable key %q migrated as %q, %v; was %q", k, got, err, v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys == 0 {
		t.Fatal("no stable key in the bbolt store: raft always sets CurrentTerm")
	}
}

// TestWALNodeRestart restarts a node on its WAL: every entry it had is still
// there, unchanged, and it appends after them.
func TestWALNodeRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := solo(t, dir, "127.0.0.1:0", nil)
	for i, sb := range sandboxIDs(5) {
		mustWrite(t, n, sb, "k", fmt.Sprint(i))
	}
	before := map[uint64]raft.Log{}
	first, _ := n.store.FirstIndex()
	last, _ := n.store.LastIndex()
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		before[i] = l
	}
	addr := n.RaftAddr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	m := solo(t, dir, addr, nil)
	mustWrite(t, m, sandboxIDs(1)[0], "k", "after")
	if f, _ := m.store.FirstIndex(); f != first {
		t.Fatalf("first index %d after a restart, was %d", f, first)
	}
	if l, _ := m.store.LastIndex(); l <= last {
		t.Fatalf("last index %d after a restart and a write, was %d", l, last)
	}
	for i, want := range before {
		var got raft.Log
		if err := m.store.GetLog(i, &got); err != nil {
			t.Fatal(err)
		}
		if got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d changed across a restart: %+v, was %+v", i, got, want)
		}
	}
}

// TestWALInstallSnapshot cuts a follower off while the others commit and compact
// their logs past its last entry, then heals it: the leader sends a snapshot, and
// the follower, whose log now ends below the snapshot with a gap after it, drops
// its whole log (the WAL refuses a gap, raft.MonotonicLogStore) and catches up.
func TestWALInstallSnapshot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.raftConf = func(rc *raft.Config) { rc.TrailingLogs = 2 }
	})
	l := leader(t, h.nodes...)
	f := h.others(l)[0]
	fLast, _ := f.store.LastIndex()
	h.isolate(f)
	sb := owned(t, l, 1)[0]
	for i := range 20 {
		mustWrite(t, l, sb, "k", fmt.Sprint(i))
	}
	var snapped *Node
	waitFor(t, "a snapshot that compacts past the follower's log", func() bool {
		snapped = leader(t, h.others(f)...)
		if err := snapped.raft.Snapshot().Error(); err != nil {
			t.Logf("snapshot: %v", err)
			return false
		}
		first, _ := snapped.store.FirstIndex()
		return first > fLast+1
	})
	h.heal(f)
	caughtUp(t, h.nodes...)
	if got := get(t, f, sb, "k"); got != "19" {
		t.Fatalf("follower after the snapshot: k=%q, want 19", got)
	}
	if first, _ := f.store.FirstIndex(); first <= fLast {
		t.Fatalf("follower's log starts at %d, at or below its old last entry %d", first, fLast)
	}
	mustWrite(t, l, sb, "k", "after")
	want, _ := leader(t, h.nodes...).store.LastIndex()
	waitFor(t, "the follower's log to reach the leader's", func() bool {
		last, _ := f.store.LastIndex()
		return last >= want
	})
}

// TestWALLogBelowSnapshot restarts a node whose log ends below its latest
// snapshot, as a crash after a snapshot install and before raft deleted the old
// log leaves it: the node deletes that log at Open and appends after the snapshot.
func TestWALLogBelowSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := solo(t, dir, "127.0.0.1:0", nil)
	sb := sandboxIDs(1)[0]
	for i := range 5 {
		mustWrite(t, n, sb, "k", fmt.Sprint(i))
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	addr := n.RaftAddr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "raft"), 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("snapshots %v, %v", metas, err)
	}
	w := openTestWAL(t, filepath.Join(dir, "raft", walDir), 0)
	last, _ := w.LastIndex()
	if err := w.DeleteRange(metas[0].Index-2, last); err != nil {
		t.Fatal(err)
	}
	last = metas[0].Index
	w.Close()

	m := solo(t, dir, addr, nil)
	mustWrite(t, m, sb, "k", "after")
	if got := get(t, m, sb, "k"); got != "after" {
		t.Fatalf("k=%q after the restart, want after", got)
	}
	if first, _ := m.store.FirstIndex(); first <= last {
		t.Fatalf("log starts at %d, below the snapshot at %d", first, last)
	}
}
