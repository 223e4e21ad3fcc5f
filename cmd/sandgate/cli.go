package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/sandgate/sandgate/sdk"
)

// defaultAddr is the gateway address when $SANDGATE_ADDR is unset.
const defaultAddr = "http://127.0.0.1:7070"

// env is what a subcommand may touch of the outside world.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// cmdFlags is a subcommand's flag set plus the connection flags every client command
// has.
type cmdFlags struct {
	*flag.FlagSet
	name, usage string
	addr, token string
}

// newFlags makes the flag set of subcommand name; usage is the argument synopsis and
// a description, printed by --help.
func newFlags(e *env, name, usage string) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name, usage: usage}
	f.SetOutput(io.Discard)
	f.StringVar(&f.addr, "addr", "", "gateway address (default $SANDGATE_ADDR or "+defaultAddr+")")
	f.StringVar(&f.token, "token", "", "API token (default $SANDGATE_TOKEN)")
	return f
}

// printUsage writes the synopsis and the flags to w.
func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: sandgate %s %s\n\nFlags:\n", f.name, strings.TrimLeft(f.usage, " "))
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// parse parses args, allowing flags between the positional arguments, and checks
// that there are between min and max positionals (max < 0: any). ok is false when the
// command must return code.
func (f *cmdFlags) parse(e *env, args []string, min, max int) (pos []string, code int, ok bool) {
	for {
		if err := f.Parse(args); err != nil {
			return nil, f.parseError(e, err), false
		}
		args = f.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		fmt.Fprintf(e.stderr, "sandgate %s: wrong number of arguments\n", f.name)
		f.printUsage(e.stderr)
		return nil, 2, false
	}
	return pos, 0, true
}

// parseError turns a flag error into an exit code: --help prints the usage to stdout
// and succeeds.
func (f *cmdFlags) parseError(e *env, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		f.printUsage(e.stdout)
		return 0
	}
	fmt.Fprintf(e.stderr, "sandgate %s: %v\n", f.name, err)
	f.printUsage(e.stderr)
	return 2
}

// client builds the SDK client from the flags and the environment.
func (f *cmdFlags) client(e *env) *sdk.Client {
	return sdk.New(f.address(e), f.tokenValue(e), nil)
}

func (f *cmdFlags) address(e *env) string {
	addr := f.addr
	if addr == "" {
		addr = e.getenv("SANDGATE_ADDR")
	}
	if addr == "" {
		addr = defaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

func (f *cmdFlags) tokenValue(e *env) string {
	if f.token != "" {
		return f.token
	}
	return e.getenv("SANDGATE_TOKEN")
}

// fail prints err for a failed request and returns exit code 1 (130 when the user
// interrupted).
func (f *cmdFlags) fail(ctx context.Context, e *env, err error) int {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintf(e.stderr, "sandgate %s: interrupted\n", f.name)
		return 130
	}
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		fmt.Fprintf(e.stderr, "sandgate %s: %s: %s\n", f.name, apiErr.Code, apiErr.Message)
		switch apiErr.Code {
		case sdk.CodeUnauthorized:
			fmt.Fprintln(e.stderr, "  (set $SANDGATE_TOKEN or --token to the gateway's token)")
		case sdk.CodeUnavailable, sdk.CodeBudgetExceeded:
			if apiErr.RetryAfter > 0 {
				fmt.Fprintf(e.stderr, "  (retry after %s)\n", apiErr.RetryAfter)
			}
		}
	default:
		fmt.Fprintf(e.stderr, "sandgate %s: %v\n", f.name, err)
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			fmt.Fprintf(e.stderr, "  (is a gateway running at %s? set $SANDGATE_ADDR or --addr)\n", f.address(e))
		}
	}
	return 1
}

// kvFlag is a repeatable k=v flag.
type kvFlag map[string]string

var _ flag.Value = kvFlag{}

// String formats the pairs for flag defaults.
func (m kvFlag) String() string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

// Set adds one k=v pair.
func (m kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not k=v", s)
	}
	m[k] = v
	return nil
}
