package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

// execKeep is how long the record of an exec's process stays listed after it exits:
// long enough for the CLI to read its exit after a reconnect, short enough not to
// crowd `sandgate ps`.
const execKeep = 5 * time.Minute

// execTag tags the processes exec starts, so `sandgate ps --tag exec` finds them.
const execTag = "exec"

// inputChunk bounds one input request: well under the server's 1 MiB JSON limit once
// base64-encoded.
const inputChunk = 256 << 10

func cmdExec(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "exec", `[flags] SANDBOX [--] COMMAND [ARG...]

Runs COMMAND in SANDBOX as a process, streams its stdout and stderr to yours as it
runs, and exits with its exit code (128+N when signal N killed it, 124 when
--timeout killed it). A lone COMMAND argument is run by /bin/sh -c (so "ls | wc -l"
works); several are run directly, without a shell. Put flags before SANDBOX or right
after it, and the command after --.

Without -i the command's stdin is empty; with -i your stdin is sent to it. With -t
the command runs on a PTY of your terminal's size, your terminal is put in raw mode
(as by attach) and its output is one stream; piped input (-it < file) ends with an
end-of-file character, as if Ctrl-D were typed. A dropped connection is resumed from
the byte offset reached. Interrupting sandgate (Ctrl-C without -t) sends SIGTERM to
the command and exits 130. Output is never cut while exec reads it; what the
command writes before exec's stream connects (its first milliseconds) is kept up to
the sandbox's output buffer, and a byte range lost past it is reported.`)
	cwd := f.String("cwd", "", "working directory, relative to the sandbox workspace")
	envs := kvFlag{}
	f.Var(envs, "env", "environment variable `K=V` for the command (repeatable)")
	f.Var(envs, "e", "short for --env `K=V`")
	timeout := f.Duration("timeout", 0, "kill the command after this long (default: the server's budget)")
	interactive := f.Bool("i", false, "send your stdin to the command")
	tty := f.Bool("t", false, "run the command on a PTY; with -i, your terminal in raw mode")
	if err := f.Parse(f.splitShort(args)); err != nil {
		return f.parseError(e, err)
	}
	if f.NArg() == 0 {
		return f.usageError(e, "missing SANDBOX and COMMAND")
	}
	sb := f.Arg(0)
	if err := f.Parse(f.splitShort(f.Args()[1:])); err != nil {
		return f.parseError(e, err)
	}
	cmd := f.Args()
	if len(cmd) == 0 {
		return f.usageError(e, "missing COMMAND")
	}
	req := sdk.CreateProcessRequest{Cwd: *cwd, Env: envs, Tag: execTag, KeepMS: execKeep.Milliseconds()}
	if len(cmd) == 1 {
		req.Command = cmd[0]
	} else {
		req.Argv = cmd
	}
	if *timeout > 0 {
		req.TimeoutMS = max((*timeout).Milliseconds(), 1)
	}
	x := &execRun{f: f, e: e, c: f.client(e), sb: sb, timeout: *timeout}
	if *tty {
		return x.runTTY(ctx, req, *interactive)
	}
	return x.run(ctx, req, *interactive)
}

// execRun is one exec: its process and how to report its end.
type execRun struct {
	f       *cmdFlags
	e       *env
	c       *sdk.Client
	sb      string
	proc    string
	timeout time.Duration
	started time.Time
}

// start creates the process.
func (x *execRun) start(ctx context.Context, req sdk.CreateProcessRequest) error {
	x.started = time.Now()
	p, err := x.c.CreateProcess(ctx, x.sb, req)
	if err != nil {
		return err
	}
	x.proc = p.ID
	return nil
}

// run streams a process without a PTY: its output over the SSE route (which keeps
// stdout and stderr apart) and, with interactive, stdin through the input route.
func (x *execRun) run(ctx context.Context, req sdk.CreateProcessRequest, interactive bool) int {
	if err := x.start(ctx, req); err != nil {
		return x.startFailed(ctx, err)
	}
	if interactive {
		go x.sendInput(ctx)
	} else if err := x.closeInput(ctx); err != nil {
		return x.interrupted(ctx, err)
	}
	for ev, err := range x.c.ProcessOutput(ctx, x.sb, x.proc, 0) {
		if err != nil {
			return x.interrupted(ctx, err)
		}
		switch ev.Type {
		case sdk.OutputData:
			w := x.e.stdout
			if ev.Stream == "stderr" {
				w = x.e.stderr
			}
			if _, err := w.Write(ev.Data); err != nil {
				return x.interrupted(ctx, fmt.Errorf("failed to write output: %w", err))
			}
		case sdk.OutputGap:
			reportGap(x.e, ev.From, ev.To, false)
		case sdk.OutputExit:
			return x.exit(ev.ExitCode, ev.Signal)
		}
	}
	return x.f.fail(ctx, x.e, errors.New("output stream ended without the process's exit"))
}

// startFailed reports a process that could not be created. A program the server
// could not find or run exits 127 or 126, as a shell does (a lone COMMAND, run by
// /bin/sh -c, gets those codes from the shell itself); anything else is sandgate's
// own failure.
func (x *execRun) startFailed(ctx context.Context, err error) int {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) && apiErr.Code == sdk.CodeInvalidArgument {
		for _, c := range []struct {
			says string
			code int
		}{{": command not found", 127}, {": permission denied", 126}, {": cannot execute", 126}} {
			if strings.Contains(apiErr.Message, c.says) {
				fmt.Fprintf(x.e.stderr, "sandgate exec: %s\n", apiErr.Message)
				return c.code
			}
		}
	}
	return x.f.fail(ctx, x.e, err)
}

// sendInput copies stdin to the process, then closes its stdin. It runs on its own
// goroutine, which nobody waits for: a blocked Read cannot be interrupted, and the
// program exits when the process does.
func (x *execRun) sendInput(ctx context.Context) {
	buf := make([]byte, inputChunk)
	for {
		n, err := x.e.stdin.Read(buf)
		if n > 0 {
			if werr := x.c.WriteProcessInput(ctx, x.sb, x.proc, sdk.InputRequest{Data: buf[:n]}); werr != nil {
				if !sdk.IsConflict(werr) && ctx.Err() == nil { // conflict: the process exited
					fmt.Fprintf(x.e.stderr, "sandgate exec: failed to send input: %v\n", werr)
				}
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(x.e.stderr, "sandgate exec: failed to read stdin: %v\n", err)
			}
			_ = x.closeInput(ctx)
			return
		}
	}
}

// closeInput closes the process's stdin; a process that already exited is fine.
func (x *execRun) closeInput(ctx context.Context) error {
	err := x.c.WriteProcessInput(ctx, x.sb, x.proc, sdk.InputRequest{EOF: true})
	if sdk.IsConflict(err) {
		return nil
	}
	return err
}

// exit reports how the process ended and returns the exit code.
func (x *execRun) exit(code *int, sig *sdk.Signal) int {
	if x.timeout > 0 && killedBy(sig, "SIGKILL") && time.Since(x.started) >= x.timeout {
		fmt.Fprintf(x.e.stderr, "sandgate exec: command timed out after %s\n", x.timeout)
		return 124
	}
	return exitStatus(code, sig)
}

// interrupted handles err, which ended the stream: when the user interrupted, the
// process is sent SIGTERM (it is this command's); either way err is reported.
func (x *execRun) interrupted(ctx context.Context, err error) int {
	if ctx.Err() != nil && x.proc != "" {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = x.c.SignalProcess(sctx, x.sb, x.proc, "SIGTERM")
		cancel()
	}
	return x.f.fail(ctx, x.e, err)
}
