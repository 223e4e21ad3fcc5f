package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

func cmdExec(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "exec", `[flags] SANDBOX [--] COMMAND [ARG...]

Runs one command in SANDBOX, prints its stdout and stderr to yours and exits with
its exit code (124 when it timed out). A lone COMMAND argument is run by /bin/sh -c
(so "ls | wc -l" works); several are run directly, without a shell. Nothing persists
between calls. Put flags before SANDBOX or right after it, and the command after --.`)
	cwd := f.String("cwd", "", "working directory, relative to the sandbox workspace")
	envs := kvFlag{}
	f.Var(envs, "env", "environment variable `K=V` for the command (repeatable)")
	timeout := f.Duration("timeout", 0, "kill the command after this long (default: the server's)")
	stdin := f.Bool("i", false, "send this program's stdin to the command")
	if err := f.Parse(args); err != nil {
		return f.parseError(e, err)
	}
	if f.NArg() == 0 {
		fmt.Fprintln(e.stderr, "sandgate exec: missing SANDBOX and COMMAND")
		f.printUsage(e.stderr)
		return 2
	}
	sb := f.Arg(0)
	if err := f.Parse(f.Args()[1:]); err != nil {
		return f.parseError(e, err)
	}
	cmd := f.Args()
	if len(cmd) == 0 {
		fmt.Fprintln(e.stderr, "sandgate exec: missing COMMAND")
		f.printUsage(e.stderr)
		return 2
	}
	req := sdk.ExecRequest{Cwd: *cwd, Env: envs, TimeoutMS: (*timeout).Milliseconds()}
	if len(cmd) == 1 {
		req.Command = cmd[0]
	} else {
		req.Argv = cmd
	}
	if *timeout > 0 && *timeout < time.Millisecond {
		req.TimeoutMS = 1
	}
	if *stdin {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			fmt.Fprintf(e.stderr, "sandgate exec: failed to read stdin: %v\n", err)
			return 1
		}
		req.Stdin = string(b)
	}
	res, err := f.client(e).Exec(ctx, sb, req)
	if err != nil {
		return f.fail(ctx, e, err)
	}
	io.WriteString(e.stdout, res.Stdout)
	io.WriteString(e.stderr, res.Stderr)
	if res.Truncated {
		fmt.Fprintln(e.stderr, "sandgate exec: output truncated (over the sandbox's output buffer)")
	}
	if res.TimedOut {
		fmt.Fprintf(e.stderr, "sandgate exec: command timed out after %s\n", time.Duration(res.DurationMS)*time.Millisecond)
	}
	return res.ExitCode
}
