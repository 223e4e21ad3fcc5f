package cluster

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// mixedLog is a log of batches, fenced and invalid ones among them, with control
// entries between: an epoch change in the middle, a lease entry, a configuration
// entry, an empty group and an entry that does not decode. f is a placedFSM; the
// log starts at index 100.
func mixedLog(tb testing.TB, f *fsm) []*raft.Log {
	tb.Helper()
	s := f.cur.Load()
	a, b, c := "sb-apply-a", "sb-apply-b", "sb-apply-c"
	ownerA, epochA, _ := s.owner(a)
	_, epochB, _ := s.owner(b)
	_, epochC, _ := s.owner(c)
	var to NodeID
	for _, m := range s.members {
		if m.ID != ownerA {
			to = m.ID
		}
	}
	at := func(bt *Batch, epoch uint64) *Batch { bt.Epoch = epoch; return bt }
	cmd := func(i uint64, data []byte) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}
	}
	good := encodeBatches([]*Batch{at(put(c, "x", "1"), epochC)})
	return []*raft.Log{
		cmd(100, encodeBatches([]*Batch{at(put(a, "k1", "v1", "meta", "m1"), epochA), at(put(b, "k", "fenced"), epochB+7), at(put(c, "y", "2"), epochC)})),
		cmd(101, encodeBatches([]*Batch{at(put(b, "k", "v"), epochB), at(del(a, "k1"), epochA), at(put(a, "k2", "v2"), epochA)})),
		cmd(102, encodeLeaderLease(ownerA)),
		// a's partition moves: its epoch becomes 103, and a's old epoch is fenced.
		cmd(103, encodeAssign([]move{{P: PartitionOf(a), Owner: to, Expect: epochA}})),
		cmd(104, encodeBatches([]*Batch{at(put(a, "k3", "old owner"), epochA), at(put(a, "k3", "new owner"), 103), {Sandbox: c, Epoch: epochC, DeleteSandbox: true}})),
		cmd(105, encodeBatches(nil)),
		{Index: 106, Term: 1, Type: raft.LogConfiguration},
		cmd(107, encodeBatches([]*Batch{at(put("", "k", "v"), 1), at(put(b, "k4", "v4"), epochB)})),
		cmd(108, good[:len(good)-2]),
		cmd(109, encodeBatches([]*Batch{at(put(c, "z", "3"), epochC)})),
	}
}

// outcome renders an Apply result for comparison.
func outcome(r any) string {
	switch r := r.(type) {
	case *groupResult:
		return fmt.Sprint(r.verdicts)
	case error:
		return "error"
	}
	return fmt.Sprint(r)
}

// TestApplyBatchMatchesApply applies one log entry by entry and in ApplyBatch calls
// of several sizes: the verdicts, the tables and the state file come out the same.
func TestApplyBatchMatchesApply(t *testing.T) {
	t.Parallel()
	ref := placedFSM(t, 3)
	log := mixedLog(t, ref)
	var want []string
	for _, l := range log {
		want = append(want, outcome(ref.Apply(l)))
	}
	wantFile, wantTables := dump(t, ref), ref.cur.Load().encode()
	if want[4] != "[{1 103} {0 0} {0 0}]" || want[7] != "[{2 0} {0 0}]" || want[8] != "error" {
		t.Fatalf("the log does not test what it should: %v", want)
	}

	for _, size := range []int{2, 3, 4, len(log)} {
		t.Run(fmt.Sprintf("calls of %d", size), func(t *testing.T) {
			t.Parallel()
			f := placedFSM(t, 3)
			var got []string
			for i := 0; i < len(log); i += size {
				for _, r := range f.ApplyBatch(log[i:min(i+size, len(log))]) {
					got = append(got, outcome(r))
				}
			}
			if err := f.db.drain(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("verdicts\n got %v\nwant %v", got, want)
			}
			if d := dump(t, f); d != wantFile {
				t.Errorf("file\n got %s\nwant %s", d, wantFile)
			}
			if string(f.cur.Load().encode()) != string(wantTables) {
				t.Error("tables differ")
			}
		})
	}
}

// TestApplyBatchFileNeverBehindTables checks that whatever is not a batch entry
// (a published table, the beforeBatches hook) sees every batch entry before it in
// the state file, even when raft hands them over in one call.
func TestApplyBatchFileNeverBehindTables(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	log := mixedLog(t, f)
	var seen []string
	f.observe = func(s *state) { seen = append(seen, fmt.Sprintf("tables@%d file@%d", s.index, f.db.applied.Load())) }
	f.beforeBatches = func(i uint64) { seen = append(seen, fmt.Sprintf("hook@%d file@%d", i, f.db.applied.Load())) }
	f.ApplyBatch(log)
	if err := f.db.drain(); err != nil {
		t.Fatal(err)
	}
	want := "[hook@100 file@0 hook@101 file@100 tables@103 file@101 hook@104 file@101 hook@105 file@104 hook@107 file@105 hook@108 file@107 hook@109 file@107]"
	if fmt.Sprint(seen) != want {
		t.Fatalf("got  %v\nwant %s", seen, want)
	}
	if got := f.db.applied.Load(); got != 109 {
		t.Fatalf("file at %d, want 109", got)
	}
}

// TestApplyRunReplay writes a run on a file that already holds part of it, as after
// a restart: entries at or below the file's index are not written again, even if a
// replay brought different batches (which a log cannot, so any trace of them would
// be a second application), and the file's index is the run's last.
func TestApplyRunReplay(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := openStateDB(path)
	if err != nil {
		t.Fatal(err)
	}
	ok := []batchVerdict{{}}
	first := []runEntry{
		{index: 10, bs: []*Batch{put("sb", "a", "1")}, vs: ok},
		{index: 12, bs: []*Batch{put("sb", "b", "2")}, vs: ok},
	}
	if _, err := db.applyRun(first); err != nil {
		t.Fatal(err)
	}
	// A restart: the file is closed and opened again, then the log replayed.
	if err := db.close(); err != nil {
		t.Fatal(err)
	}
	if db, err = openStateDB(path); err != nil {
		t.Fatal(err)
	}
	f := newFSM(discard, db)
	t.Cleanup(func() {
		if err := db.close(); err != nil {
			t.Error(err)
		}
	})
	if got := db.applied.Load(); got != 12 {
		t.Fatalf("reopened at %d, want 12", got)
	}
	replay := []runEntry{
		{index: 10, bs: []*Batch{put("sb", "a", "twice")}, vs: ok},
		{index: 12, bs: []*Batch{{Sandbox: "sb", DeleteSandbox: true}}, vs: ok},
		{index: 13, bs: []*Batch{put("sb", "c", "3")}, vs: ok},
		{index: 15, bs: []*Batch{put("sb", "d", "4")}, vs: ok},
	}
	changed, err := db.applyRun(replay)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(changed) != "[sb]" {
		t.Errorf("changed %v", changed)
	}
	want := "applied 15\n" +
		"d \"sb\\x00a\"=\"1\"\nd \"sb\\x00b\"=\"2\"\nd \"sb\\x00c\"=\"3\"\nd \"sb\\x00d\"=\"4\"\ni \"sb\"=\"\"\n"
	if got := dump(t, f); got != want {
		t.Fatalf("file\n got %q\nwant %q", got, want)
	}
	if changed, err := db.applyRun(replay); err != nil || changed != nil {
		t.Fatalf("a run wholly in the file: changed %v, err %v", changed, err)
	}
}
