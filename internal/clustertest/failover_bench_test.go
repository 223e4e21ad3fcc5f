package clustertest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// BenchmarkFailover measures failover on three real serve processes at the default
// lease (L = 3 s, δ = 0.5 s), each figure the median of $SANDGATE_FAILOVER_ROUNDS
// rounds (5 by default):
//   - leader-owner: the leader, owner of a sandbox, killed with SIGKILL → the sandbox
//     answers from another node;
//   - control: the same kill → a control write (a token added to the cluster's
//     replicated table) succeeds through a survivor;
//   - follower-owner: the owner of a sandbox, a node that does not lead, killed →
//     the sandbox answers from another node.
//
// The killed node is started again after each round. With $SANDGATE_FAILOVER_BASE
// naming another sandgate executable (an earlier build, the baseline), a cluster of it
// runs beside this build's and the rounds alternate between the two. b.N is ignored:
// run it with -benchtime=1x.
func BenchmarkFailover(b *testing.B) {
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("SANDGATE_FAILOVER_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	type build struct {
		name string
		c    *clustertest.Cluster
		figs map[string][]time.Duration
	}
	builds := []*build{{name: "this", c: clustertest.Start(b, &clustertest.Config{Nodes: 3})}}
	if base := os.Getenv("SANDGATE_FAILOVER_BASE"); base != "" {
		builds = append(builds, &build{name: "base", c: clustertest.Start(b, &clustertest.Config{Nodes: 3, Binary: base})})
	}
	for r := range rounds {
		for i := range builds {
			bd := builds[(i+r)%len(builds)] // rotate which build goes first
			if bd.figs == nil {
				bd.figs = map[string][]time.Duration{}
			}
			lo, ctl := killOwner(b, bd.c, fmt.Sprintf("%s-lo-%d", bd.name, r), true)
			fo, _ := killOwner(b, bd.c, fmt.Sprintf("%s-fo-%d", bd.name, r), false)
			bd.figs["leader-owner"] = append(bd.figs["leader-owner"], lo)
			bd.figs["control"] = append(bd.figs["control"], ctl)
			bd.figs["follower-owner"] = append(bd.figs["follower-owner"], fo)
			b.Logf("round %d %s: leader-owner %v (control writes %v), follower-owner %v", r+1, bd.name,
				lo.Round(time.Millisecond), ctl.Round(time.Millisecond), fo.Round(time.Millisecond))
		}
	}
	for _, bd := range builds {
		for _, k := range []string{"leader-owner", "control", "follower-owner"} {
			f := slices.Clone(bd.figs[k])
			slices.Sort(f)
			med := f[len(f)/2]
			b.Logf("%s %s: median %v, min %v, max %v of %d", bd.name, k, med.Round(time.Millisecond),
				f[0].Round(time.Millisecond), f[len(f)-1].Round(time.Millisecond), len(f))
			b.ReportMetric(med.Seconds(), bd.name+"-"+k+"-s")
		}
	}
}

// killOwner creates sandboxes named prefix-N until one is owned by the leader (lead)
// or by another node (!lead), kills that owner, and returns how long until the sandbox
// answered from a survivor and, when the owner led, until a control write succeeded
// through one. It starts the owner again and waits for three members before it
// returns.
func killOwner(tb testing.TB, c *clustertest.Cluster, prefix string, lead bool) (answered, control time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.WaitMembers(ctx, c.Nodes[0], 3); err != nil {
		tb.Fatal(err)
	}
	info, err := c.Info(ctx, c.Nodes[0])
	if err != nil || c.Node(info.Leader) == nil {
		tb.Fatalf("no leader: %+v %v", info, err)
	}
	sb, owner := c.CreateWhere(ctx, tb, prefix, func(node string) bool { return (node == info.Leader) == lead })
	var survivor *clustertest.Node
	for _, n := range c.Nodes {
		if n != owner {
			survivor = n
			break
		}
	}
	ctlDone := make(chan time.Duration, 1)
	owner.Kill(tb)
	killed := time.Now()
	if lead {
		go func() { ctlDone <- controlWrite(ctx, c, owner, killed) }()
	}
	for {
		if ctx.Err() != nil {
			tb.Fatalf("sandbox %s did not answer after its owner %s died", sb, owner.ID)
		}
		var got struct{ Node string }
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := survivor.Do(rctx, "GET", "/v1/sandboxes/"+sb, nil)
		rcancel()
		if err == nil && resp.JSON(http.StatusOK, &got) == nil && got.Node != owner.ID {
			answered = time.Since(killed)
			break
		}
		time.Sleep(20 * time.Millisecond) // a killed node's sandboxes have no event to wait on
	}
	if lead {
		control = <-ctlDone
	}
	tb.Logf("%s: owner %s (leader: %v) killed; survivors logged, after the kill:%s", prefix, owner.ID, lead, milestones(c, owner, killed))
	owner.Restart(tb)
	if err := c.WaitMembers(ctx, owner, 3); err != nil {
		tb.Fatal(err)
	}
	return answered, control
}

// milestones returns, from the survivors' logs, when each logged the failover's
// steps after killed: a leadership ready, the dead leader counted from its last
// lease entry, the dead member marked down (its partitions moved).
func milestones(c *clustertest.Cluster, dead *clustertest.Node, killed time.Time) string {
	steps := []string{"cluster: leading", "cluster: previous leader counted", "cluster: member silent past its lease"}
	out := ""
	for _, n := range c.Nodes {
		if n == dead {
			continue
		}
		for _, line := range strings.Split(n.Log(), "\n") {
			ts, rest, ok := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if !ok {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || at.Before(killed) {
				continue
			}
			for _, st := range steps {
				if strings.Contains(rest, st) {
					out += fmt.Sprintf("\n\t%s +%v %s", n.ID, at.Sub(killed).Round(time.Millisecond), st)
				}
			}
		}
	}
	return out
}

// controlWrite adds a token through the running nodes other than dead until one
// accepts it, and returns how long after killed that was (0 if ctx ended first).
func controlWrite(ctx context.Context, c *clustertest.Cluster, dead *clustertest.Node, killed time.Time) time.Duration {
	sum := sha256.Sum256([]byte("failover-bench-" + killed.String()))
	body := map[string]any{"tokens": []map[string]any{{"sha256": hex.EncodeToString(sum[:]), "tenant": "bench"}}}
	for i := 0; ctx.Err() == nil; i++ {
		n := c.Nodes[i%len(c.Nodes)]
		if n == dead {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := n.Do(rctx, "POST", "/v1/cluster/tokens", body)
		cancel()
		if err == nil && resp.Status < 300 {
			return time.Since(killed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}
