package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// entry returns the test entry of index i: sizes, types and extensions vary.
func entry(i uint64) *raft.Log {
	l := &raft.Log{
		Index: i, Term: 1 + i/50, Type: raft.LogCommand,
		Data:       bytes.Repeat([]byte{byte(i)}, int(i%7)*9+1),
		AppendedAt: time.Unix(1700000000, int64(i)),
	}
	if i%5 == 0 {
		l.Extensions = []byte(fmt.Sprint("ext", i))
	}
	if i%17 == 0 {
		l.Type = raft.LogConfiguration
	}
	return l
}

func entries(lo, hi uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, entry(i))
	}
	return out
}

// openTestWAL opens the WAL in dir, closed at cleanup.
func openTestWAL(tb testing.TB, dir string, segSize int64) *wal {
	tb.Helper()
	w, err := openWAL(dir, slog.New(slog.DiscardHandler), segSize)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}

// storeBatches appends lo..hi in batches of n entries.
func storeBatches(tb testing.TB, w *wal, lo, hi uint64, n int) {
	tb.Helper()
	for i := lo; i <= hi; i += uint64(n) {
		if err := w.StoreLogs(entries(i, min(hi, i+uint64(n)-1))); err != nil {
			tb.Fatal(err)
		}
	}
}

// checkLog fails unless w holds exactly entries first..last (0, 0: empty).
func checkLog(tb testing.TB, w *wal, first, last uint64) {
	tb.Helper()
	f, _ := w.FirstIndex()
	l, _ := w.LastIndex()
	if f != first || l != last {
		tb.Fatalf("log holds %d..%d, want %d..%d", f, l, first, last)
	}
	var got raft.Log
	for _, i := range []uint64{first - 1, last + 1} {
		if err := w.GetLog(i, &got); !errors.Is(err, raft.ErrLogNotFound) {
			tb.Fatalf("GetLog(%d) outside the log: %v", i, err)
		}
	}
	for i := first; i <= last && last > 0; i++ {
		if err := w.GetLog(i, &got); err != nil {
			tb.Fatalf("GetLog(%d): %v", i, err)
		}
		want := entry(i)
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
			!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			tb.Fatalf("entry %d read back as %+v, want %+v", i, got, *want)
		}
	}
}

// segmentFiles returns the segment files of dir in index order.
func segmentFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	bases, err := listSegments(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, b := range bases {
		out = append(out, filepath.Join(dir, segmentName(b)))
	}
	return out
}

// TestWAL runs appends, deletions and reopens and checks the log after each case.
func TestWAL(t *testing.T) {
	t.Parallel()
	type op struct {
		do      string // "store", "delete", "reopen", "cut-last-segment"
		lo, hi  uint64
		batch   int
		wantErr error
	}
	tests := []struct {
		name        string
		segSize     int64
		ops         []op
		first, last uint64
		segs        int // segment files at the end; -1: more than one
	}{
		{name: "empty", ops: []op{{do: "reopen"}}},
		{name: "append and read", ops: []op{{do: "store", lo: 1, hi: 100, batch: 100}}, first: 1, last: 100, segs: 1},
		{name: "batches continue", ops: []op{{do: "store", lo: 1, hi: 10, batch: 3}, {do: "reopen"}, {do: "store", lo: 11, hi: 20, batch: 1}}, first: 1, last: 20, segs: 1},
		{name: "a gap is refused", ops: []op{{do: "store", lo: 1, hi: 10, batch: 10}, {do: "store", lo: 12, hi: 13, batch: 2, wantErr: errWALOrder}}, first: 1, last: 10, segs: 1},
		{name: "an index repeated is refused", ops: []op{{do: "store", lo: 1, hi: 10, batch: 10}, {do: "store", lo: 10, hi: 11, batch: 2, wantErr: errWALOrder}}, first: 1, last: 10, segs: 1},
		{name: "rotation", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}}, first: 1, last: 300, segs: -1},
		{name: "rotation survives a reopen", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}, {do: "reopen"}, {do: "store", lo: 301, hi: 320, batch: 4}}, first: 1, last: 320, segs: -1},
		{name: "a batch larger than a segment", segSize: 64, ops: []op{{do: "store", lo: 1, hi: 50, batch: 50}, {do: "store", lo: 51, hi: 60, batch: 10}}, first: 1, last: 60, segs: 2},
		{name: "head inside a segment", ops: []op{{do: "store", lo: 1, hi: 100, batch: 7}, {do: "delete", lo: 1, hi: 40}, {do: "reopen"}}, first: 41, last: 100, segs: 1},
		{name: "head drops whole segments", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}, {do: "delete", lo: 1, hi: 250}, {do: "reopen"}, {do: "store", lo: 301, hi: 310, batch: 5}}, first: 251, last: 310, segs: -1},
		{name: "head below the first index", ops: []op{{do: "store", lo: 1, hi: 50, batch: 50}, {do: "delete", lo: 1, hi: 20}, {do: "delete", lo: 5, hi: 30}, {do: "reopen"}}, first: 31, last: 50, segs: 1},
		{name: "tail inside a segment", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}, {do: "delete", lo: 295, hi: 300}, {do: "store", lo: 295, hi: 299, batch: 5}, {do: "reopen"}}, first: 1, last: 299, segs: -1},
		{name: "tail across segments", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}, {do: "delete", lo: 120, hi: 300}, {do: "reopen"}, {do: "store", lo: 120, hi: 130, batch: 3}}, first: 1, last: 130, segs: -1},
		{name: "tail from a segment's first entry", segSize: 1024, ops: []op{{do: "store", lo: 1, hi: 300, batch: 10}, {do: "cut-last-segment"}, {do: "reopen"}}, first: 1, last: 0, segs: -1},
		{name: "everything, then a conflict's index", ops: []op{{do: "store", lo: 1, hi: 50, batch: 50}, {do: "delete", lo: 1, hi: 50}, {do: "reopen"}, {do: "store", lo: 1, hi: 10, batch: 10}, {do: "reopen"}}, first: 1, last: 10, segs: 1},
		{name: "everything, then a snapshot's next index", ops: []op{{do: "store", lo: 1, hi: 50, batch: 50}, {do: "delete", lo: 1, hi: 80}, {do: "store", lo: 81, hi: 90, batch: 10}, {do: "reopen"}}, first: 81, last: 90, segs: 1},
		{name: "a range inside the log is refused", ops: []op{{do: "store", lo: 1, hi: 50, batch: 50}, {do: "delete", lo: 10, hi: 20, wantErr: ErrInvalid}}, first: 1, last: 50, segs: 1},
		{name: "a range outside the log is nothing", ops: []op{{do: "store", lo: 10, hi: 50, batch: 50}, {do: "delete", lo: 1, hi: 9}, {do: "delete", lo: 51, hi: 60}}, first: 10, last: 50, segs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w := openTestWAL(t, dir, tt.segSize)
			last := tt.last
			for _, o := range tt.ops {
				var err error
				switch o.do {
				case "store":
					for i := o.lo; i <= o.hi && err == nil; i += uint64(o.batch) {
						err = w.StoreLogs(entries(i, min(o.hi, i+uint64(o.batch)-1)))
					}
				case "delete":
					err = w.DeleteRange(o.lo, o.hi)
				case "cut-last-segment":
					base := w.tail().base
					last = base - 1
					err = w.DeleteRange(base, w.tail().last())
				case "reopen":
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
					w = openTestWAL(t, dir, tt.segSize)
				}
				if !errors.Is(err, o.wantErr) {
					t.Fatalf("%s %d..%d: %v, want %v", o.do, o.lo, o.hi, err, o.wantErr)
				}
			}
			checkLog(t, w, tt.first, last)
			switch n := len(segmentFiles(t, dir)); {
			case tt.segs == -1 && n < 2, tt.segs >= 0 && n != tt.segs:
				t.Fatalf("%d segment files, want %d (-1: several)", n, tt.segs)
			}
		})
	}
}

// TestWALTornTail cuts the last segment at every byte of its last record, as a
// crash in the middle of an append leaves it, and zeroes the record from every
// byte on (pages sized but never written): the open drops that record, keeps every
// earlier entry and appends after them. A last segment left empty is removed.
func TestWALTornTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		segSize int64
		batch   int
	}{
		{name: "record among others", segSize: 2048, batch: 3},
		{name: "the last segment's only record", segSize: 1, batch: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const n = 40
			dir := t.TempDir()
			w := openTestWAL(t, dir, tt.segSize)
			storeBatches(t, w, 1, n, tt.batch)
			tail := w.tail()
			path, from := tail.path, tail.offs[len(tail.offs)-1]
			w.Close()
			whole, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for cut := from; cut < int64(len(whole)); cut++ {
				for _, zero := range []bool{false, true} {
					b := append([]byte(nil), whole[:cut]...)
					if zero {
						b = append(b, make([]byte, int64(len(whole))-cut)...)
					}
					if err := os.WriteFile(path, b, 0o600); err != nil {
						t.Fatal(err)
					}
					w := openTestWAL(t, dir, tt.segSize)
					checkLog(t, w, 1, n-1)
					if err := w.StoreLogs(entries(n, n)); err != nil {
						t.Fatalf("append after a torn tail cut at %d: %v", cut, err)
					}
					w.Close()
					w = openTestWAL(t, dir, tt.segSize)
					checkLog(t, w, 1, n)
					w.Close()
				}
			}
		})
	}
}

// TestWALCorrupt: damage that is not a torn last append refuses the open, with an
// error naming the file and, within it, the offset.
func TestWALCorrupt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, segs []string) (file string, offset int64)
	}{
		{name: "bad CRC mid-file in the last segment", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			return flipRecord(t, segs[len(segs)-1], 2)
		}},
		{name: "bad CRC at the end of an earlier segment", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			return flipRecord(t, segs[0], -1)
		}},
		{name: "an earlier segment cut short", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			fi, err := os.Stat(segs[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(segs[1], fi.Size()-3); err != nil {
				t.Fatal(err)
			}
			return segs[1], -1
		}},
		{name: "a missing segment", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			if err := os.Remove(segs[2]); err != nil {
				t.Fatal(err)
			}
			return segs[1], -1
		}},
		{name: "a missing head segment", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			if err := os.Remove(segs[0]); err != nil {
				t.Fatal(err)
			}
			return segs[1], -1
		}},
		{name: "a segment named for another index", damage: func(t *testing.T, dir string, segs []string) (string, int64) {
			moved := filepath.Join(dir, segmentName(1_000_000))
			if err := os.Rename(segs[len(segs)-1], moved); err != nil {
				t.Fatal(err)
			}
			return moved, 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w := openTestWAL(t, dir, 1024)
			storeBatches(t, w, 1, 200, 10)
			w.Close()
			file, off := tt.damage(t, dir, segmentFiles(t, dir))
			w, err := openWAL(dir, slog.New(slog.DiscardHandler), 1024)
			if err == nil {
				w.Close()
				t.Fatal("a damaged log opened")
			}
			if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(file)) {
				t.Fatalf("error %q does not name %s as corrupt", err, file)
			}
			if want := fmt.Sprintf("offset %d", off); off >= 0 && !bytes.Contains([]byte(err.Error()), []byte(want)) {
				t.Fatalf("error %q does not say %s", err, want)
			}
		})
	}
}

// flipRecord flips a byte in the payload of record k of a segment file (-1: the
// last) and returns the file and the record's offset.
func flipRecord(t *testing.T, path string, k int) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := parseSegmentName(filepath.Base(path))
	sc := scanSegment(b, base)
	if k < 0 {
		k = len(sc.offs) - 1
	}
	off := sc.offs[k]
	b[off+recordHeader+1] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, off
}

// TestWALBroken: an append that fails and cannot be undone (here the segment's
// file is gone from under the store) stops every later write, since the files may
// no longer match the index; a reopen recovers what was synced.
func TestWALBroken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := openTestWAL(t, dir, 0)
	storeBatches(t, w, 1, 20, 5)
	w.tail().f.Close() // every write, truncate and sync of it now fails
	if err := w.StoreLogs(entries(21, 22)); err == nil {
		t.Fatal("an append to a closed file succeeded")
	}
	if err := w.StoreLogs(entries(21, 22)); err == nil || !strings.Contains(err.Error(), "half-way") {
		t.Fatalf("an append after a failed one: %v", err)
	}
	if err := w.DeleteRange(15, 20); err == nil || !strings.Contains(err.Error(), "half-way") {
		t.Fatalf("a deletion after a failed append: %v", err)
	}
	w = openTestWAL(t, dir, 0)
	checkLog(t, w, 1, 20)
}
