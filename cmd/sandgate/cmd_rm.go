package main

import (
	"context"
	"fmt"
)

func cmdRm(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "rm", `[flags] SANDBOX...

Deletes each SANDBOX: every process tree in it is killed and its storage removed.
Prints the id of each one deleted. A sandbox that cannot be deleted (not found, say)
is reported and the others are still deleted; the exit code is then 125.`)
	pos, code, ok := f.parse(e, args, 1, -1)
	if !ok {
		return code
	}
	c := f.client(e)
	code = 0
	for _, sb := range pos {
		if err := c.DeleteSandbox(ctx, sb); err != nil {
			if code = f.fail(ctx, e, err); code == exitInterrupted {
				return code
			}
			continue
		}
		fmt.Fprintln(e.stdout, sb)
	}
	return code
}
