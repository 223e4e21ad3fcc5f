package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

func cmdCluster(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "cluster", `[flags]

Shows the cluster as the gateway at --addr sees it: this node, the leader, the raft
term and every member.`)
	out := f.addOutput()
	if _, code, ok := f.parse(e, args, 0, 0); !ok {
		return code
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
	fmt.Fprintf(e.stdout, "node %s, leader %s, term %d\n\n", cl.Node, dash(cl.Leader), cl.Term)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tROLE\tHTTP\tRAFT\tLABELS")
	for _, m := range cl.Members {
		role := "follower"
		if m.ID == cl.Leader {
			role = "leader"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, dash(m.Status), role, m.HTTPAddr, m.RaftAddr, dash(joinLabels(m.Labels)))
	}
	tw.Flush()
	return 0
}
