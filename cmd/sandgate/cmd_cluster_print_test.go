package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sdk"
)

// TestPrintClusterUnmovable: a draining member with pinned sandboxes its drain
// cannot move is named with them after the table; a cluster without any prints no
// such line.
func TestPrintClusterUnmovable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		members []sdk.Member
		want    string
	}{
		{
			name: "draining with unmovable pins",
			members: []sdk.Member{
				{ID: "a", Status: "draining", Pins: 2, Unmovable: []string{"sb-1", "sb-2"}},
				{ID: "b", Status: "alive", Voter: true},
			},
			want: "a is draining but keeps 2 pinned sandboxes no alive member's labels match: sb-1, sb-2\n",
		},
		{name: "none", members: []sdk.Member{{ID: "b", Status: "alive", Voter: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			printCluster(&env{stdout: &out}, &sdk.Cluster{Node: "b", Leader: "b", Members: tt.members, Partitions: 4096})
			got := out.String()
			if tt.want != "" && !strings.HasSuffix(got, tt.want) {
				t.Fatalf("output:\n%s\nwant it to end with %q", got, tt.want)
			}
			if tt.want == "" && strings.Contains(got, "keeps") {
				t.Fatalf("output names unmovable sandboxes:\n%s", got)
			}
		})
	}
}
