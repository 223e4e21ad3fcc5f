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

// stdinTerminal returns the file descriptor of stdin when it is a terminal.
func stdinTerminal(e *env) (fd int, ok bool) {
	in, isFile := e.stdin.(*os.File)
	if !isFile || !term.IsTerminal(int(in.Fd())) {
		return -1, false
	}
	return int(in.Fd()), true
}

// terminalSize is the size of the terminal fd, or zero when it cannot be read.
func terminalSize(fd int) sdk.PTYSize {
	if w, h, err := term.GetSize(fd); err == nil {
		return sdk.PTYSize{Cols: w, Rows: h}
	}
	return sdk.PTYSize{}
}

// rawTerminal puts the terminal fd in raw mode, sends its size to a and follows its
// size (SIGWINCH) until restore is called. restore may be called more than once.
func rawTerminal(ctx context.Context, fd int, a *sdk.Attachment) (restore func(), err error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("failed to set raw mode: %w", err)
	}
	if size := terminalSize(fd); size.Cols > 0 {
		_ = a.Resize(ctx, size)
	}
	stop := onResize(func() {
		if size := terminalSize(fd); size.Cols > 0 {
			_ = a.Resize(ctx, size)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			_ = term.Restore(fd, old)
		})
	}, nil
}

// pumpOptions says what [pump] forwards.
type pumpOptions struct {
	input  bool // copy stdin to the attachment
	detach bool // Ctrl-] in the input detaches
	// raw says the terminal is in raw mode: notices end their lines with "\r\n".
	raw bool
	// eof types the end of input (Ctrl-D) when stdin ends, so that a program reading a
	// PTY whose input was piped sees end of file. It goes on the same WebSocket as the
	// input, after it; a partial last line takes two, as on a terminal.
	eof bool
}

// eofChar is the terminal's end-of-file character (VEOF), Ctrl-D.
const eofChar = 0x04

// pumpResult is how a pumped attachment ended.
type pumpResult struct {
	exited   bool // the process exited, with code or killed by signal
	code     *int
	signal   *sdk.Signal
	detached bool // the user typed Ctrl-]
	err      error
}

// pump copies the attachment's output to stdout and, with o.input, stdin to the
// attachment, until the process exits, the user detaches, ctx ends or the attachment
// is lost. The attachment reconnects by itself from the offset reached, so a
// connection closed with 1012 or dropped loses and repeats no byte.
func pump(ctx context.Context, e *env, a *sdk.Attachment, o pumpOptions) pumpResult {
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var res pumpResult
	if o.input {
		go func() {
			// A blocked Read cannot be interrupted, so nobody waits for this goroutine:
			// after the attachment ends its next Write fails and it returns, and the
			// program exits anyway.
			buf := make([]byte, 4096)
			last := byte('\n')
			for {
				n, err := e.stdin.Read(buf)
				if n > 0 {
					last = buf[n-1]
				}
				chunk := buf[:n]
				i := -1
				if o.detach {
					i = bytes.IndexByte(chunk, detachKey)
				}
				if i >= 0 {
					chunk = chunk[:i]
				}
				if len(chunk) > 0 && a.Write(loopCtx, chunk) != nil {
					return
				}
				if i >= 0 {
					mu.Lock()
					res.detached = true
					mu.Unlock()
					stop()
					return
				}
				if err != nil {
					if o.eof {
						eof := []byte{eofChar}
						if last != '\n' {
							eof = append(eof, eofChar)
						}
						_ = a.Write(loopCtx, eof)
					}
					return
				}
			}
		}()
	}
	for {
		ev, err := a.Next(loopCtx)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
				res.err = err
			}
			break
		}
		switch ev.Type {
		case sdk.AttachReady:
			if ev.Restarted {
				fmt.Fprint(e.stderr, "\r\n[the terminal's shell ended and a new one started]\r\n")
			}
		case sdk.AttachOutput:
			if _, err := e.stdout.Write(ev.Data); err != nil {
				res.err = err
			}
		case sdk.AttachGap:
			reportGap(e, ev.From, ev.To, o.raw)
		case sdk.AttachExit:
			res.exited, res.code, res.signal = true, ev.ExitCode, ev.Signal
		}
		if res.err != nil {
			break
		}
	}
	stop()
	a.Close()
	mu.Lock()
	defer mu.Unlock()
	return res
}
