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

// commands lists the client subcommands; serve is dispatched separately. An array
// that the compiler lays out in the binary, not a map built at package
// initialisation, which runs in every sandbox's init too (the binary re-executed).
var commands = [...]struct {
	name string
	command
}{
	{"create", command{"create a sandbox and print its id", cmdCreate}},
	{"ls", command{"list sandboxes (also: sandboxes)", cmdSandboxes}},
	{"sandboxes", command{"list sandboxes (also: ls)", cmdSandboxes}},
	{"rm", command{"delete sandboxes, with their processes and files", cmdRm}},
	{"exec", command{"run a command in a sandbox, streaming its output; exit with its code", cmdExec}},
	{"ps", command{"list the processes of a sandbox", cmdPs}},
	{"inspect", command{"show a sandbox, or a process in it", cmdInspect}},
	{"kill", command{"send a signal to a process (default SIGKILL)", cmdKill}},
	{"logs", command{"print a process's output (-f follows it)", cmdLogs}},
	{"attach", command{"attach your terminal to a sandbox terminal (detach: Ctrl-])", cmdAttach}},
	{"cp", command{"copy files between a sandbox and the local file system", cmdCp}},
	{"events", command{"print a sandbox's event log (-f follows it)", cmdEvents}},
	{"cluster", command{"show the cluster's nodes, leader and partition spread (rm: remove a member)", cmdCluster}},
}

// lookupCommand returns the client subcommand called name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c.command, true
		}
	}
	return command{}, false
}

// commandOrder is the order of `sandgate help`.
var commandOrder = []string{"serve", "create", "ls", "sandboxes", "rm", "exec", "ps", "inspect", "kill", "logs", "attach", "cp", "events", "cluster", "version"}

// run is the whole program, minus process exit: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return dispatch(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitSandgate
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 {
			if c, ok := lookupCommand(rest[0]); ok {
				e.command = rest[0]
				return c.run(ctx, e, []string{"--help"})
			}
			switch rest[0] {
			case "serve":
				return cmdServe(ctx, []string{"--help"}, e.stdout, e.stderr)
			case "version":
				return cmdVersion(e, []string{"--help"})
			}
			fmt.Fprintf(e.stderr, "sandgate: unknown command %q\n", rest[0])
			return exitSandgate
		}
		usage(e.stdout)
		return 0
	case "-version", "--version", "version":
		return cmdVersion(e, rest)
	case "serve":
		return cmdServe(ctx, rest, e.stdout, e.stderr)
	}
	c, ok := lookupCommand(name)
	if !ok {
		fmt.Fprintf(e.stderr, "sandgate: unknown command %q\n\n", name)
		usage(e.stderr)
		return exitSandgate
	}
	e.command = name
	return c.run(ctx, e, rest)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: sandgate <command> [flags] [args]

sandgate is an open sandbox gateway: "sandgate serve" runs a node, the other
commands talk to one.

commands:
`)
	for _, name := range commandOrder {
		summary := "run a gateway node"
		if name == "version" {
			summary = "print the version of this binary (also: --version)"
		}
		if c, ok := lookupCommand(name); ok {
			summary = c.summary
		}
		fmt.Fprintf(w, "  %-10s %s\n", name, summary)
	}
	fmt.Fprint(w, `
Client commands talk to $SANDGATE_ADDR (default `+defaultAddr+`) with the token
in $SANDGATE_TOKEN; --addr and --token override them. Several members' addresses,
separated by commas, are tried in order when one cannot be reached.
Run "sandgate <command> -h" for a command's flags.

Exit codes: a command's own exit code for exec (and attach), 125 when sandgate
itself failed (usage error, request refused, sandbox not found, server
unreachable), 130 when interrupted.
`)
}
