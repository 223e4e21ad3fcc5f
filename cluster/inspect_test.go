package cluster

import (
	"maps"
	"testing"
)

func TestStateSpread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		assign map[int]Assignment // partitions set; the rest stay unassigned
		want   map[NodeID]int
	}{
		{"fresh table", nil, map[NodeID]int{"": Partitions}},
		{"two owners", map[int]Assignment{
			0: {Owner: "a", Epoch: 3, State: PartitionActive},
			1: {Owner: "b", Epoch: 3, State: PartitionActive},
			2: {Owner: "a", Epoch: 4, State: PartitionActive},
		}, map[NodeID]int{"a": 2, "b": 1, "": Partitions - 3}},
		{"an owner named but not active counts as unassigned", map[int]Assignment{
			5: {Owner: "a", Epoch: 9, State: PartitionUnassigned},
		}, map[NodeID]int{"": Partitions}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := emptyState()
			for p, a := range tt.assign {
				s.parts[p] = a
			}
			if got := s.spread(); !maps.Equal(got, tt.want) {
				t.Fatalf("spread = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestVotersAndSpread: four real nodes, so the fourth stays a non-voter (the target
// is 3 voters); every replica reports the same suffrage and a spread that covers
// every partition, each member owning some.
func TestVotersAndSpread(t *testing.T) {
	t.Parallel()
	waiting := openNode(t, testConfig("waiter", t.TempDir(), "127.0.0.1:0", true))
	if v := waiting.Voters(); len(v) != 0 {
		t.Fatalf("a node waiting to be added reports voters %v", v)
	}
	if s := waiting.Spread(); !maps.Equal(s, map[NodeID]int{"": Partitions}) {
		t.Fatalf("a node waiting to be added reports spread %v", s)
	}

	nodes := cluster(t, 4)
	waitFor(t, "every replica to agree on suffrage and spread", func() bool {
		for _, n := range nodes {
			v := n.Voters()
			if len(v) != 4 {
				return false
			}
			votes := 0
			for _, isVoter := range v {
				if isVoter {
					votes++
				}
			}
			if votes != 3 {
				return false
			}
			s := n.Spread()
			if s[""] != 0 || len(s) != 4 {
				return false
			}
			total := 0
			for id, c := range s {
				if _, ok := v[id]; !ok || c == 0 {
					return false
				}
				total += c
			}
			if total != Partitions {
				t.Fatalf("%s: spread %v sums to %d, want %d", n.ID(), s, total, Partitions)
			}
		}
		return true
	})
	l := leader(t, nodes...)
	if !l.Voters()[l.ID()] {
		t.Fatalf("the leader %s is not a voter: %v", l.ID(), l.Voters())
	}
}
