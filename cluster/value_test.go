package cluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestValuesReplicate sets, changes and deletes keys on the leader and reads them
// on every replica, with the change hook called; a follower refuses with the leader's
// name and bad keys are refused.
func TestValuesReplicate(t *testing.T) {
	t.Parallel()
	var hooks [2]atomic.Int64
	nodes := clusterWith(t, 2, func(i int, cfg *Config) { cfg.OnValues = func() { hooks[i].Add(1) } })
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	// Setting values is safe to repeat: a set that met a leadership change
	// (ErrNotLeader, its outcome unknown) is sent again to the leader of the moment.
	for _, kv := range []map[string][]byte{
		{"tok/a": []byte("1"), "tok/b": []byte("2"), "other": []byte("x")},
		{"tok/a": nil, "tok/b": []byte("3")},
	} {
		if err := onLeader(t, nodes, func(l *Node) error { return l.SetValues(ctx, kv) }); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		waitFor(t, "the values on "+string(n.ID()), func() bool {
			v, ok := n.Value("tok/b")
			return ok && string(v) == "3"
		})
		got := n.Values("tok/")
		if len(got) != 1 || string(got["tok/b"]) != "3" {
			t.Errorf("%s: Values(tok/) = %q", n.ID(), got)
		}
		if _, ok := n.Value("tok/a"); ok {
			t.Errorf("%s: deleted key tok/a still there", n.ID())
		}
		if hooks[i].Load() < 2 {
			t.Errorf("%s: OnValues called %d times, want at least 2", n.ID(), hooks[i].Load())
		}
	}
	// On a follower of the moment (one that won an election in between is asked again).
	var err error
	waitFor(t, "a SetValue on a follower", func() bool {
		l := leader(t, nodes...)
		f := nodes[0]
		if f == l {
			f = nodes[1]
		}
		err = f.SetValue(ctx, "k", []byte("v"))
		return err != nil || !f.IsLeader()
	})
	if !errors.Is(err, ErrNotLeader) {
		t.Errorf("SetValue on a follower: %v, want ErrNotLeader", err)
	}
	l := leader(t, nodes...)
	for _, bad := range []string{"", strings.Repeat("k", MaxKeyLen+1)} {
		if err := l.SetValue(ctx, bad, []byte("v")); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetValue(%.10q): %v, want ErrInvalid", bad, err)
		}
	}
	if err := l.SetValue(ctx, "big", make([]byte, MaxValueLen+1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetValue of a big value: %v, want ErrInvalid", err)
	}
}

// TestValuesSnapshot round-trips the key/value table through a snapshot, and
// decodes a version 2 snapshot (before the table) with an empty one.
func TestValuesSnapshot(t *testing.T) {
	t.Parallel()
	s, err := emptyState().setValues(map[string][]byte{"a": []byte("1"), "b": []byte("2")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(s.encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.values) != 2 || string(got.values["a"]) != "1" || string(got.values["b"]) != "2" {
		t.Fatalf("values after a round trip: %q", got.values)
	}
	old := emptyState().encode()
	old[0] = 2
	// Version 2 had neither the table nor version 4's handoff section (empty: one
	// zero byte each).
	old = old[:len(old)-2]
	got, err = decodeState(old)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.values) != 0 {
		t.Fatalf("version 2 snapshot decoded with values %q", got.values)
	}
	// Version 3 is version 4 without the handoff section.
	v3 := s.encode()
	v3[0] = 3
	v3 = v3[:len(v3)-1]
	got, err = decodeState(v3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.values) != 2 || string(got.values["b"]) != "2" {
		t.Fatalf("version 3 snapshot decoded with values %q", got.values)
	}
}
