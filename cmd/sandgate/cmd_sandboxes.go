package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

func cmdSandboxes(ctx context.Context, e *env, args []string) int {
	name := "ls"
	if e.command == "sandboxes" {
		name = "sandboxes"
	}
	f := newFlags(e, name, `[flags]

Lists the sandboxes you can see in the cluster ("ls" and "sandboxes" are the same
command).`)
	labels := kvFlag{}
	f.Var(labels, "label", "only sandboxes with this label `k=v` (repeatable: all must match)")
	out := f.addOutput()
	if _, code, ok := f.parse(e, args, 0, 0); !ok {
		return code
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	list, err := f.client(e).ListSandboxes(ctx, &sdk.ListSandboxesOptions{Labels: labels})
	if err != nil {
		return f.fail(ctx, e, err)
	}
	if asJSON {
		return printJSON(e, map[string]any{"sandboxes": list})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tNODE\tPROCS\tSESSIONS\tTERMINALS\tCREATED\tLABELS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", s.ID, s.State, dash(s.Node),
			s.Counts.Processes, s.Counts.Sessions, s.Counts.Terminals,
			s.CreatedAt.UTC().Format(time.RFC3339), dash(joinLabels(s.Labels)))
	}
	tw.Flush()
	return 0
}

// joinLabels formats labels as sorted k=v pairs.
func joinLabels(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
