package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

func cmdInspect(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "inspect", `[flags] SANDBOX [PROCESS]

Shows SANDBOX (its state, node, labels, budget and usage), or PROCESS in it (its
command, status and exit). --output json prints the object as the API returns it.`)
	out := f.addOutput()
	pos, code, ok := f.parse(e, args, 1, 2)
	if !ok {
		return code
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	c := f.client(e)
	var v any
	var rows [][2]string
	if len(pos) == 2 {
		p, err := c.GetProcess(ctx, pos[0], pos[1], nil)
		if err != nil {
			return f.fail(ctx, e, err)
		}
		v, rows = p, processRows(p)
	} else {
		sb, err := c.GetSandbox(ctx, pos[0])
		if err != nil {
			return f.fail(ctx, e, err)
		}
		v, rows = sb, sandboxRows(sb)
	}
	if asJSON {
		return printJSON(e, v)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	tw.Flush()
	return 0
}

func sandboxRows(s *sdk.Sandbox) [][2]string {
	b := s.Budget
	rows := [][2]string{
		{"ID", s.ID}, {"STATE", string(s.State)}, {"NODE", dash(s.Node)}, {"TENANT", dash(s.Tenant)},
		{"LABELS", dash(joinLabels(s.Labels))},
		{"CREATED", s.CreatedAt.UTC().Format(time.RFC3339)}, {"LAST ACTIVE", s.LastActiveAt.UTC().Format(time.RFC3339)},
		{"COUNTS", fmt.Sprintf("processes=%d sessions=%d terminals=%d", s.Counts.Processes, s.Counts.Sessions, s.Counts.Terminals)},
		{"BUDGET", fmt.Sprintf("memory=%d pids=%d cpu_millis=%d disk=%d network=%s max_processes=%d idle_ttl=%s max_duration=%s",
			b.MemoryBytes, b.Pids, b.CPUMillis, b.DiskBytes, b.Network, b.MaxProcesses,
			time.Duration(b.IdleTTLMS)*time.Millisecond, time.Duration(b.MaxDurationMS)*time.Millisecond)},
	}
	if u := s.Usage; u != nil {
		rows = append(rows, [2]string{"USAGE", fmt.Sprintf("memory=%d pids=%d disk=%d", u.MemoryBytes, u.Pids, u.DiskBytes)})
	}
	return rows
}

func processRows(p *sdk.Process) [][2]string {
	cmd := p.Command
	if cmd == "" {
		cmd = strings.Join(p.Argv, " ")
	}
	exit := "-"
	if p.Status == sdk.ProcessExited {
		exit = fmt.Sprint(exitStatus(p.ExitCode, p.Signal))
		if p.Signal != nil {
			exit += " (" + string(*p.Signal) + ")"
		}
	}
	return [][2]string{
		{"ID", p.ID}, {"PID", fmt.Sprint(p.PID)}, {"COMMAND", cmd}, {"CWD", dash(p.Cwd)},
		{"STATUS", string(p.Status)}, {"EXIT", exit}, {"PTY", fmt.Sprint(p.PTY)},
		{"TAG", dash(p.Tag)}, {"LABEL", dash(p.Label)}, {"SESSION", dash(p.Session)},
		{"CREATED", p.CreatedAt.UTC().Format(time.RFC3339)},
		{"OUTPUT", fmt.Sprintf("offset=%d dropped=%d", p.OutputOffset, p.OutputDropped)},
	}
}
