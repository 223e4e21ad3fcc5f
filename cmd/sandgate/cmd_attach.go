package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"

	"github.com/sandgate/sandgate/sdk"
)

// detachKey is Ctrl-]: it detaches without ending the terminal's shell.
const detachKey = 0x1d

func cmdAttach(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "attach", `[flags] SANDBOX TERMINAL

Attaches your terminal to TERMINAL in SANDBOX: your terminal is put in raw mode, its
size follows yours, and everything you type goes to the shell. Ctrl-] detaches and
leaves the shell running. A dropped connection is resumed where it stopped. The
command exits with the shell's exit code if the shell exits.`)
	create := f.Bool("create", false, "create the terminal if it does not exist (get-or-create)")
	offset := f.Int64("offset", 0, "replay output from this byte offset (-1: live output only, as the server decides)")
	shell := f.String("shell", "", "shell of a terminal made by --create (default: the server's)")
	pos, code, ok := f.parse(e, args, 2, 2)
	if !ok {
		return code
	}
	sb, id := pos[0], pos[1]
	c := f.client(e)

	in, isTTY := e.stdin.(*os.File)
	isTTY = isTTY && term.IsTerminal(int(in.Fd()))
	size := sdk.PTYSize{}
	if isTTY {
		if w, h, err := term.GetSize(int(in.Fd())); err == nil {
			size = sdk.PTYSize{Cols: w, Rows: h}
		}
	}
	var err error
	if *create {
		_, _, err = c.PutTerminal(ctx, sb, id, sdk.PutTerminalRequest{Cols: size.Cols, Rows: size.Rows, Shell: *shell})
	} else {
		_, err = c.GetTerminal(ctx, sb, id)
		if sdk.IsNotFound(err) {
			fmt.Fprintf(e.stderr, "sandgate attach: terminal %q not found in sandbox %q (use --create to make it)\n", id, sb)
			return 1
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
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			fmt.Fprintf(e.stderr, "sandgate attach: failed to set raw mode: %v\n", err)
			return 1
		}
		restore = func() { _ = term.Restore(int(in.Fd()), old) }
		defer restore()
		if size.Cols > 0 {
			_ = a.Resize(ctx, size)
		}
		stop := onResize(func() {
			if w, h, err := term.GetSize(int(in.Fd())); err == nil {
				_ = a.Resize(ctx, sdk.PTYSize{Cols: w, Rows: h})
			}
		})
		defer stop()
	}

	loopCtx, detach := context.WithCancel(ctx)
	defer detach()
	var detached bool
	var mu sync.Mutex
	go func() {
		// Copy input until Ctrl-] or the end of stdin. A blocked Read cannot be
		// interrupted, so nobody waits for this goroutine: after the attachment ends
		// its next Write fails and it returns, and the process exits anyway.
		defer detach()
		buf := make([]byte, 4096)
		for {
			n, err := e.stdin.Read(buf)
			chunk := buf[:n]
			i := bytes.IndexByte(chunk, detachKey)
			if i >= 0 {
				chunk = chunk[:i]
			}
			if len(chunk) > 0 {
				if a.Write(loopCtx, chunk) != nil {
					return
				}
			}
			if i >= 0 {
				mu.Lock()
				detached = true
				mu.Unlock()
				return
			}
			if err != nil {
				return
			}
		}
	}()
	exit := 0
	var loopErr error
	for {
		ev, err := a.Next(loopCtx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				loopErr = err
			}
			break
		}
		switch ev.Type {
		case sdk.AttachOutput:
			if _, err := e.stdout.Write(ev.Data); err != nil {
				loopErr = err
			}
		case sdk.AttachExit:
			if ev.ExitCode != nil {
				exit = *ev.ExitCode
			}
		}
		if loopErr != nil {
			break
		}
	}
	detach()
	a.Close()
	mu.Lock()
	wasDetached := detached
	mu.Unlock()
	switch {
	case wasDetached:
		fmt.Fprintf(e.stderr, "\r\n[detached from %s/%s]\r\n", sb, id)
		return 0
	case loopErr != nil && !errors.Is(loopErr, context.Canceled):
		restore() // before printing; restoring twice is harmless
		return f.fail(ctx, e, loopErr)
	case ctx.Err() != nil:
		fmt.Fprint(e.stderr, "\r\n[interrupted]\r\n")
		return 130
	}
	return exit
}
