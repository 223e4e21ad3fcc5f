package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Client subcommands stop on SIGINT/SIGTERM through ctx. serve counts the signals
	// itself (the first shuts down cleanly, a second forces), so it gets none here: a
	// signal that both ended ctx and reached serve would count twice.
	ctx, stop := context.Background(), func() {}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one client subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands lists the client subcommands; serve is dispatched separately.
var commands = map[string]command{
	"exec":      {"run one command in a sandbox and exit with its exit code", cmdExec},
	"ps":        {"list the processes of a sandbox", cmdPs},
	"logs":      {"print a process's output (-f follows it)", cmdLogs},
	"attach":    {"attach your terminal to a sandbox terminal (detach: Ctrl-])", cmdAttach},
	"sandboxes": {"list sandboxes", cmdSandboxes},
	"cluster":   {"show the cluster's nodes and leader", cmdCluster},
}

// commandOrder is the order of `sandgate help`.
var commandOrder = []string{"serve", "exec", "ps", "logs", "attach", "sandboxes", "cluster"}

// run is the whole program, minus process exit: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return dispatch(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 {
			if c, ok := commands[rest[0]]; ok {
				return c.run(ctx, e, []string{"--help"})
			}
			if rest[0] == "serve" {
				return cmdServe(ctx, []string{"--help"}, e.stdout, e.stderr)
			}
			fmt.Fprintf(e.stderr, "sandgate: unknown command %q\n", rest[0])
			return 2
		}
		usage(e.stdout)
		return 0
	case "serve":
		return cmdServe(ctx, rest, e.stdout, e.stderr)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "sandgate: unknown command %q\n\n", name)
		usage(e.stderr)
		return 2
	}
	return c.run(ctx, e, rest)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sandgate: an open sandbox gateway.

Usage:
  sandgate <command> [flags] [args]

Commands:
`)
	for _, name := range commandOrder {
		summary := "run a gateway node"
		if c, ok := commands[name]; ok {
			summary = c.summary
		}
		fmt.Fprintf(w, "  %-10s %s\n", name, summary)
	}
	fmt.Fprint(w, `
Client commands talk to $SANDGATE_ADDR (default `+defaultAddr+`) with the token
in $SANDGATE_TOKEN; --addr and --token override them.
Run "sandgate <command> --help" for a command's flags.
`)
}
