package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// dump returns every record and index entry of f's state file, and its applied index.
func dump(tb testing.TB, f *fsm) string {
	tb.Helper()
	var sb strings.Builder
	err := f.db.view(func(tx *bolt.Tx) error {
		fmt.Fprintf(&sb, "applied %d\n", readApplied(tx))
		for _, name := range [][]byte{bucketData, bucketIndex} {
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				fmt.Fprintf(&sb, "%s %q=%q\n", name, k, v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sb.String()
}

// applyGroups applies groups of batches to f from index next on, each batch at its
// sandbox's current epoch, and returns the next free index.
func applyGroups(tb testing.TB, f *fsm, next uint64, groups, perGroup int, value string) uint64 {
	tb.Helper()
	for g := range groups {
		bs := make([]*Batch, perGroup)
		for i := range bs {
			sb := fmt.Sprintf("sb-%06d", (g*perGroup+i)%50)
			b := put(sb, fmt.Sprintf("k%d", g%7), value, "meta", sb)
			if g%9 == 8 {
				b.DeleteSandbox = true
			}
			_, b.Epoch, _ = f.cur.Load().owner(sb)
			bs[i] = b
		}
		res := f.Apply(&raft.Log{Index: next, Type: raft.LogCommand, Data: encodeBatches(bs)})
		if r, ok := res.(*groupResult); !ok || r.verdicts[0].code != batchApplied {
			tb.Fatalf("group at %d: %#v", next, res)
		}
		next++
	}
	return next
}

func TestStoreSnapshotRestore(t *testing.T) {
	t.Parallel()
	src := placedFSM(t, 3)
	next := applyGroups(t, src, 1000, 30, 8, "src")
	snap := snapshotBytes(t, src)
	want := dump(t, src)

	tests := []struct {
		name string
		// prepare brings the target's file to some point of the same log first.
		prepare func(f *fsm)
		want    func(f *fsm) string
	}{
		{"empty replica takes the file", func(*fsm) {}, func(*fsm) string { return want }},
		{"replica behind takes the file", func(f *fsm) { applyGroups(t, f, 1000, 10, 8, "src") }, func(*fsm) string { return want }},
		{"replica ahead keeps its own", func(f *fsm) {
			applyGroups(t, f, 1000, 30, 8, "src")
			applyGroups(t, f, next, 5, 8, "ahead")
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := placedFSM(t, 3)
			tt.prepare(f)
			before := dump(t, f)
			if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatal(err)
			}
			exp := before
			if tt.want != nil {
				exp = tt.want(f)
			}
			if got := dump(t, f); got != exp {
				t.Fatalf("after restore:\n%s\nwant:\n%s", got, exp)
			}
			if !bytes.Equal(f.cur.Load().encode(), src.cur.Load().encode()) {
				t.Fatal("tables differ after restore")
			}
			// The restored replica goes on applying the log.
			applyGroups(t, f, next+10, 1, 4, "after")
		})
	}
	t.Run("damaged snapshots change nothing", func(t *testing.T) {
		t.Parallel()
		f := placedFSM(t, 3)
		applyGroups(t, f, 1000, 3, 2, "mine")
		f.db.applied.Store(0) // as a fresh replica would: it would take any good file
		before := dump(t, f)
		for _, bad := range [][]byte{snap[:len(snap)-100], append(append([]byte(nil), snap...), 1, 2)} {
			if err := f.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("restore of %d bytes: %v, want ErrCorrupt", len(bad), err)
			}
			if got := dump(t, f); got != before {
				t.Fatalf("a refused snapshot changed the file:\n%s", got)
			}
		}
	})
}

// TestStoreReplaySkips applies an entry at an index the file already holds: it is a
// replay after a restart, and must not change the file even if it differs.
func TestStoreReplaySkips(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	next := applyGroups(t, f, 1000, 5, 4, "first")
	before := dump(t, f)
	applyGroups(t, f, 1002, 2, 4, "replayed") // indexes 1002, 1003 again
	if got := dump(t, f); got != before {
		t.Fatalf("a replayed entry changed the file:\n%s\nwant:\n%s", got, before)
	}
	applyGroups(t, f, next, 1, 4, "new")
	if dump(t, f) == before {
		t.Fatal("an entry past the file's index was not applied")
	}
}
