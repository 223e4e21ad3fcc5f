package main

import (
	"context"

	"github.com/sandgate/sandgate/sdk"
)

func cmdLogs(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "logs", `[flags] SANDBOX PROCESS

Prints the buffered output of PROCESS as raw bytes: its stdout (and PTY output) to
your stdout, its stderr to your stderr. With -f it then follows the live output until
the process exits, resuming by byte offset if the connection drops.`)
	follow := f.Bool("f", false, "follow the output until the process exits")
	offset := f.Int64("offset", 0, "start at this output byte offset")
	pos, code, ok := f.parse(e, args, 2, 2)
	if !ok {
		return code
	}
	c := f.client(e)
	sb, proc := pos[0], pos[1]
	end := int64(-1) // without -f: stop at the output offset the process had now
	if !*follow {
		p, err := c.GetProcess(ctx, sb, proc, nil)
		if err != nil {
			return f.fail(ctx, e, err)
		}
		if p.Status == sdk.ProcessRunning {
			end = p.OutputOffset
			if end <= *offset {
				return 0
			}
		}
	}
	for ev, err := range c.ProcessOutput(ctx, sb, proc, *offset) {
		if err != nil {
			return f.fail(ctx, e, err)
		}
		switch ev.Type {
		case sdk.OutputData:
			w := e.stdout
			if ev.Stream == "stderr" {
				w = e.stderr
			}
			if _, err := w.Write(ev.Data); err != nil {
				return 1 // our stdout is gone (a closed pipe): nothing to report to
			}
			if end >= 0 && ev.Offset+int64(len(ev.Data)) >= end {
				return 0
			}
		case sdk.OutputGap:
			reportGap(e, ev.From, ev.To, false)
			if end >= 0 && ev.To >= end {
				return 0
			}
		}
	}
	return 0
}
