package main

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/sdk"
)

// defaultPTY is the PTY size when stdin is not a terminal.
var defaultPTY = sdk.PTYSize{Cols: 80, Rows: 24}

// runTTY runs the process on a PTY and streams it over the process WebSocket: output
// to stdout, stdin (with interactive) as input, resizes from your terminal. As with
// `docker exec -t`, without interactive nothing is typed into the PTY.
func (x *execRun) runTTY(ctx context.Context, req sdk.CreateProcessRequest, interactive bool) int {
	fd, isTTY := stdinTerminal(x.e)
	size := defaultPTY
	if isTTY {
		if s := terminalSize(fd); s.Cols > 0 {
			size = s
		}
	}
	req.PTY = &size
	if err := x.start(ctx, req); err != nil {
		return x.startFailed(ctx, err)
	}
	a, err := x.c.Attach(ctx, x.sb, sdk.AttachProcess, x.proc, 0)
	if err != nil {
		return x.interrupted(ctx, err)
	}
	defer a.Close()
	restore := func() {}
	if isTTY && interactive {
		if restore, err = rawTerminal(ctx, fd, a); err != nil {
			fmt.Fprintf(x.e.stderr, "sandgate exec: %v\n", err)
			return x.interrupted(ctx, err)
		}
		defer restore()
	}
	// Piped input ends: the command is told by an end-of-file character, as if typed.
	// A terminal's input does not end; Ctrl-D typed there goes through as it is.
	res := pump(ctx, x.e, a, pumpOptions{input: interactive, eof: !isTTY, raw: isTTY && interactive})
	restore()
	switch {
	case res.exited:
		return x.exit(res.code, res.signal)
	case res.err != nil:
		return x.interrupted(ctx, res.err)
	case ctx.Err() != nil:
		return x.interrupted(ctx, ctx.Err())
	}
	return x.f.fail(ctx, x.e, fmt.Errorf("stream of process %s ended without its exit", x.proc))
}
