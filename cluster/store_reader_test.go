package cluster

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// model is the records of one sandbox after a sequence of batches, kept naively.
type model map[string]string

func (m model) apply(b *Batch) {
	if b.DeleteSandbox {
		for k := range m {
			delete(m, k)
		}
	}
	for _, op := range b.Ops {
		if op.Delete {
			delete(m, string(op.Key))
		} else {
			m[string(op.Key)] = string(op.Value)
		}
	}
}

// scan is what Reader.Scan must return for the model.
func (m model) scan(prefix, from string) []string {
	var out []string
	for k, v := range m {
		if strings.HasPrefix(k, prefix) && k >= from {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// mergedView applies file batches to a state file (indexes 1..) and keeps pending
// ones as overlay entries above them, then runs fn with the merged reader of sb.
func mergedView(t *testing.T, file, pending []*Batch, sb string, fn func(r Reader)) {
	t.Helper()
	f := testFSM(t)
	for i, b := range file {
		if _, err := f.db.applyGroup(uint64(i+1), []*Batch{b}, []batchVerdict{{}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range pending {
		f.ov.add(uint64(len(file)+1+i), []*Batch{b})
	}
	err := f.db.view(func(tx *bolt.Tx) error {
		r := &mergedReader{c: tx.Bucket(bucketData).Cursor(), pfx: dataKey(sb, nil)}
		r.d = deltaOf(f.ov.get(sb), readApplied(tx))
		fn(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func put(sb string, kv ...string) *Batch {
	b := &Batch{Sandbox: sb}
	for i := 0; i+1 < len(kv); i += 2 {
		b.Ops = append(b.Ops, Op{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return b
}

func del(sb string, keys ...string) *Batch {
	b := &Batch{Sandbox: sb}
	for _, k := range keys {
		b.Ops = append(b.Ops, Op{Key: []byte(k), Delete: true})
	}
	return b
}

func wipe(sb string, kv ...string) *Batch {
	b := put(sb, kv...)
	b.DeleteSandbox = true
	return b
}

// checkReader compares every Reader method with the model on a set of probes.
func checkReader(t *testing.T, r Reader, m model) {
	t.Helper()
	probes := []string{"", "a", "a1", "a2", "b", "b1", "c", "e", "e0", "e1", "e2", "e9", "z"}
	for _, k := range probes {
		got, want := r.Get([]byte(k)), m[k]
		if _, ok := m[k]; ok != (got != nil) || string(got) != want {
			t.Errorf("Get(%q) = %q (nil %v), want %q (present %v)", k, got, got == nil, want, ok)
		}
	}
	for _, p := range probes {
		for _, from := range probes {
			var got []string
			r.Scan([]byte(p), []byte(from), func(k, v []byte) bool { got = append(got, string(k)+"="+string(v)); return true })
			if want := m.scan(p, from); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Scan(%q, %q) = %v, want %v", p, from, got, want)
			}
		}
		all := m.scan(p, "")
		k, v := r.Last([]byte(p))
		want := ""
		if len(all) > 0 {
			want = all[len(all)-1]
		}
		if got := string(k) + "=" + string(v); (k == nil) != (want == "") || (k != nil && got != want) {
			t.Errorf("Last(%q) = %q, want %q", p, got, want)
		}
	}
	// Scan stops when fn returns false.
	n := 0
	r.Scan(nil, nil, func(_, _ []byte) bool { n++; return false })
	if len(m) > 0 && n != 1 {
		t.Errorf("Scan went on after false: %d calls", n)
	}
}

func TestMergedReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		file, pending []*Batch
	}{
		{"file only", []*Batch{put("s", "a1", "x", "e1", "1", "e2", "2")}, nil},
		{"pending only", nil, []*Batch{put("s", "a1", "x", "e1", "1")}},
		{"pending overrides", []*Batch{put("s", "e1", "old", "e2", "2")}, []*Batch{put("s", "e1", "new")}},
		{"pending deletes the last", []*Batch{put("s", "e1", "1", "e2", "2")}, []*Batch{del("s", "e2")}},
		{"pending deletes then puts", []*Batch{put("s", "e1", "1")}, []*Batch{del("s", "e1"), put("s", "e1", "again")}},
		{"pending wipes the sandbox", []*Batch{put("s", "a1", "x", "e1", "1")}, []*Batch{wipe("s")}},
		{"wipe then puts", []*Batch{put("s", "a1", "x", "e1", "1")}, []*Batch{wipe("s", "e2", "2"), put("s", "b1", "y")}},
		{"file wipe", []*Batch{put("s", "a1", "x"), wipe("s", "e9", "9")}, []*Batch{put("s", "e0", "0")}},
		{"other sandboxes stay apart", []*Batch{put("r", "e1", "r"), put("s", "e2", "s"), put("t", "e0", "t")}, []*Batch{put("r", "e3", "r"), wipe("t")}},
		{"empty value", []*Batch{{Sandbox: "s", Ops: []Op{{Key: []byte("e1")}}}}, []*Batch{{Sandbox: "s", Ops: []Op{{Key: []byte("e2")}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := model{}
			for _, b := range append(append([]*Batch(nil), tt.file...), tt.pending...) {
				if b.Sandbox == "s" {
					m.apply(b)
				}
			}
			mergedView(t, tt.file, tt.pending, "s", func(r Reader) { checkReader(t, r, m) })
		})
	}
}

// TestMergedReaderRandom splits random histories at random points between the file
// and the overlay and checks the merged reader against the model.
func TestMergedReaderRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a1", "a2", "b1", "e0", "e1", "e2", "e9"}
	for round := range 40 {
		var hist []*Batch
		for range 1 + rng.IntN(12) {
			b := &Batch{Sandbox: "s", DeleteSandbox: rng.IntN(10) == 0}
			for range rng.IntN(4) {
				k := keys[rng.IntN(len(keys))]
				if rng.IntN(3) == 0 {
					b.Ops = append(b.Ops, Op{Key: []byte(k), Delete: true})
				} else {
					b.Ops = append(b.Ops, Op{Key: []byte(k), Value: fmt.Appendf(nil, "v%d", rng.IntN(100))})
				}
			}
			hist = append(hist, b)
		}
		cut := rng.IntN(len(hist) + 1)
		m := model{}
		for _, b := range hist {
			m.apply(b)
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			mergedView(t, hist[:cut], hist[cut:], "s", func(r Reader) { checkReader(t, r, m) })
		})
	}
}
