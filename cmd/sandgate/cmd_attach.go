package main

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/sdk"
)

func cmdAttach(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "attach", `[flags] SANDBOX TERMINAL

Attaches your terminal to TERMINAL in SANDBOX: your terminal is put in raw mode, its
size follows yours, and everything you type goes to the shell. Ctrl-] detaches and
leaves the shell running. A dropped connection (or one the server closes with 1012
on shutdown or an ownership move) is resumed where it stopped. The command exits
with the shell's exit code if the shell exits.`)
	create := f.Bool("create", false, "create the terminal if it does not exist (get-or-create)")
	offset := f.Int64("offset", 0, "replay output from this byte offset (-1: live output only, as the server decides)")
	shell := f.String("shell", "", "shell of a terminal made by --create (default: the server's)")
	pos, code, ok := f.parse(e, args, 2, 2)
	if !ok {
		return code
	}
	sb, id := pos[0], pos[1]
	c := f.client(e)

	fd, isTTY := stdinTerminal(e)
	size := sdk.PTYSize{}
	if isTTY {
		size = terminalSize(fd)
	}
	var err error
	if *create {
		_, _, err = c.PutTerminal(ctx, sb, id, sdk.PutTerminalRequest{Cols: size.Cols, Rows: size.Rows, Shell: *shell})
	} else {
		_, err = c.GetTerminal(ctx, sb, id)
		if sdk.IsNotFound(err) {
			// Say which is missing: the sandbox (or another tenant's), or only the terminal.
			if _, serr := c.GetSandbox(ctx, sb); serr != nil {
				return f.fail(ctx, e, serr)
			}
			fmt.Fprintf(e.stderr, "sandgate attach: terminal %q not found in sandbox %q (use --create to make it)\n", id, sb)
			return exitSandgate
		}
	}
	if err != nil {
		return f.fail(ctx, e, err)
	}
	a, err := c.Attach(ctx, sb, sdk.AttachTerminal, id, *offset)
	if err != nil {
		return f.fail(ctx, e, err)
	}
	defer a.Close()

	restore := func() {}
	if isTTY {
		if restore, err = rawTerminal(ctx, fd, a); err != nil {
			fmt.Fprintf(e.stderr, "sandgate attach: %v\n", err)
			return exitSandgate
		}
		defer restore()
	}
	res := pump(ctx, e, a, pumpOptions{input: true, detach: true, raw: isTTY})
	restore() // before printing
	switch {
	case res.detached:
		fmt.Fprintf(e.stderr, "\r\n[detached from %s/%s]\r\n", sb, id)
		return 0
	case res.err != nil:
		return f.fail(ctx, e, res.err)
	case ctx.Err() != nil:
		fmt.Fprint(e.stderr, "\r\n[interrupted]\r\n")
		return exitInterrupted
	}
	if res.exited {
		return exitStatus(res.code, res.signal)
	}
	return 0
}
