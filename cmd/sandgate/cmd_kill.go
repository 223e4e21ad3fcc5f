package main

import (
	"context"
)

func cmdKill(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "kill", `[flags] SANDBOX PROCESS

Sends a signal to PROCESS (an id from "sandgate ps") in SANDBOX. The process's
record stays until it is deleted or its keep time passes.`)
	signal := f.String("signal", "SIGKILL", "signal `name` (SIGTERM, TERM) or number")
	f.StringVar(signal, "s", "SIGKILL", "short for --signal")
	pos, code, ok := f.parse(e, args, 2, 2)
	if !ok {
		return code
	}
	if err := f.client(e).SignalProcess(ctx, pos[0], pos[1], *signal); err != nil {
		return f.fail(ctx, e, err)
	}
	return 0
}
