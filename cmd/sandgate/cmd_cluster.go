package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/sandgate/sandgate/sdk"
)

func cmdCluster(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "cluster", `[flags] [rm|drain ID...]

Shows the cluster as the gateway at --addr sees it: this node and its lease, the
leader, the raft term, and every member with its status, raft role (leader, voter or
non-voter) and how many of the partitions it owns (its share of the sandboxes).

  sandgate cluster rm ID...   removes members (an admin token only): each is marked
                              left, its sandboxes move to the others once its lease
                              has run out, and it leaves raft. Prints each id removed.
  sandgate cluster drain ID...
                              drains members (an admin token only): each is marked
                              draining and its sandboxes move to the others one
                              planned move at a time (processes end cleanly, clients
                              reconnect); it returns at once, prints each id, and
                              'sandgate cluster' shows the drain's progress.`)
	out := f.addOutput()
	pos, code, ok := f.parse(e, args, 0, -1)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		c := f.client(e)
		var op func(context.Context, string) error
		switch pos[0] {
		case "rm":
			op = c.RemoveMember
		case "drain":
			op = c.DrainMember
		default:
			return f.usageError(e, "unknown argument %q (did you mean rm or drain?)", pos[0])
		}
		if len(pos) == 1 {
			return f.usageError(e, "%s needs the ID of the member", pos[0])
		}
		return eachMember(ctx, e, f, op, pos[1:])
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	cl, err := f.client(e).GetCluster(ctx)
	if err != nil {
		return f.fail(ctx, e, err)
	}
	if asJSON {
		return printJSON(e, cl)
	}
	printCluster(e, cl)
	return 0
}

// eachMember runs op (remove, drain) on each member in ids and prints each id it
// succeeded for, going on past failures as rm does.
func eachMember(ctx context.Context, e *env, f *cmdFlags, op func(context.Context, string) error, ids []string) int {
	code := 0
	for _, id := range ids {
		if err := op(ctx, id); err != nil {
			if code = f.fail(ctx, e, err); code == exitInterrupted {
				return code
			}
			continue
		}
		fmt.Fprintln(e.stdout, id)
	}
	return code
}

// printCluster writes the cluster as a heading and a table of members.
func printCluster(e *env, cl *sdk.Cluster) {
	fmt.Fprintf(e.stdout, "node %s, leader %s, term %d\n", cl.Node, dash(cl.Leader), cl.Term)
	fmt.Fprintf(e.stdout, "lease %s, applied index %d\n", leaseText(cl.Lease), cl.AppliedIndex)
	fmt.Fprintf(e.stdout, "%d members, %d voters; %d partitions", len(cl.Members), cl.Voters(), cl.Partitions)
	if cl.Unassigned > 0 {
		fmt.Fprintf(e.stdout, ", %d unassigned", cl.Unassigned)
	}
	fmt.Fprint(e.stdout, "\n\n")
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tROLE\tPARTITIONS\tSHARE\tHTTP\tRAFT\tLABELS")
	for _, m := range cl.Members {
		id := m.ID
		if id == cl.Node {
			id += " *"
		}
		share := "-"
		if cl.Partitions > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(m.Partitions)/float64(cl.Partitions))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", id, dash(m.Status), role(cl, m), m.Partitions, share,
			dash(m.HTTPAddr), dash(m.RaftAddr), dash(joinLabels(m.Labels)))
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "\n* the node that answered")
	for _, m := range cl.Members {
		if len(m.Unmovable) > 0 {
			fmt.Fprintf(e.stdout, "%s is draining but keeps %d pinned sandboxes no alive member's labels match: %s\n",
				m.ID, len(m.Unmovable), strings.Join(m.Unmovable, ", "))
		}
	}
}

// role is a member's part in raft: leader, voter, or non-voter (it replicates the
// log without voting); "-" for a member that left (a server from before removed
// members were no longer listed may still show one).
func role(cl *sdk.Cluster, m sdk.Member) string {
	switch {
	case m.ID == cl.Leader:
		return "leader"
	case m.Status == "left":
		return "-"
	case m.Voter:
		return "voter"
	}
	return "non-voter"
}

// leaseText describes a node's lease for people. It shows the end time rather than
// the time left: the client's clock need not agree with the node's.
func leaseText(l sdk.Lease) string {
	const layout = "2006-01-02 15:04:05.000Z07:00"
	switch {
	case l.Until.IsZero():
		return "never held (waiting to be added to a cluster)"
	case l.Valid:
		return "valid until " + l.Until.UTC().Format(layout)
	}
	return "LAPSED at " + l.Until.UTC().Format(layout) + ": this node serves no sandbox until it renews it"
}
