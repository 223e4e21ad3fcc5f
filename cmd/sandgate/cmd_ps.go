package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/sandgate/sandgate/sdk"
)

func cmdPs(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "ps", `[flags] SANDBOX

Lists the processes of SANDBOX (terminals are listed too, tagged terminal:<id>).`)
	status := f.String("status", "", "only processes with this status: running or exited")
	tag := f.String("tag", "", "only processes with this tag")
	session := f.String("session", "", "only processes started from this session")
	out := f.addOutput()
	pos, code, ok := f.parse(e, args, 1, 1)
	if !ok {
		return code
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	procs, err := f.client(e).ListProcesses(ctx, pos[0], &sdk.ListProcessesOptions{
		Status: sdk.ProcessStatus(*status), Tag: *tag, Session: *session,
	})
	if err != nil {
		return f.fail(ctx, e, err)
	}
	if asJSON {
		return printJSON(e, map[string]any{"processes": procs})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPID\tSTATUS\tEXIT\tTAG\tLABEL\tCOMMAND")
	for _, p := range procs {
		exit := "-"
		switch {
		case p.Signal != nil:
			exit = string(*p.Signal)
		case p.ExitCode != nil:
			exit = fmt.Sprint(*p.ExitCode)
		}
		cmd := p.Command
		if cmd == "" {
			cmd = strings.Join(p.Argv, " ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.PID, p.Status, exit, dash(p.Tag), dash(p.Label), cmd)
	}
	tw.Flush()
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "sandgate: %v\n", err)
		return 1
	}
	return 0
}
