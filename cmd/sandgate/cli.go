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

// Exit codes of sandgate itself, apart from a command's own. exitSandgate follows
// docker's convention (docker run and exec exit 125 when docker itself failed), so a
// script can tell "the command failed" from "sandgate could not run it".
const (
	exitSandgate    = 125 // usage error, request refused, server unreachable
	exitInterrupted = 130 // the user interrupted (SIGINT/SIGTERM), as a shell reports it
)

// streamRetries is how many reconnects in a row the streaming commands make before
// giving up: with the SDK's backoff (200 ms doubling, capped at 5 s) about 30 s,
// enough for a node restart or an ownership move.
const streamRetries = 10

// env is what a subcommand may touch of the outside world.
type env struct {
	command        string // the subcommand's name as typed (ls or sandboxes)
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
	f := newLocalFlags(name, usage)
	f.StringVar(&f.addr, "addr", "", "gateway `address`, or several members' addresses separated by commas, tried in order when one cannot be reached (default $SANDGATE_ADDR or "+defaultAddr+")")
	f.StringVar(&f.token, "token", "", "API token (default $SANDGATE_TOKEN)")
	return f
}

// newLocalFlags is newFlags without the connection flags, for commands that talk to
// no gateway.
func newLocalFlags(name, usage string) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name, usage: usage}
	f.SetOutput(io.Discard)
	return f
}

// printUsage writes the synopsis, the description and the flags to w, in serve's
// style: long flags spelled --name, one-letter ones -x.
func (f *cmdFlags) printUsage(w io.Writer) {
	synopsis, desc, _ := strings.Cut(strings.TrimLeft(f.usage, " "), "\n")
	fmt.Fprintf(w, "usage: %s\n", strings.TrimSpace("sandgate "+f.name+" "+synopsis))
	if desc = strings.Trim(desc, "\n"); desc != "" {
		fmt.Fprintf(w, "\n%s\n", desc)
	}
	var b strings.Builder
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	if b.Len() == 0 {
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			if end := strings.IndexAny(name, " \t\n"); end > 1 || end < 0 && len(name) > 1 {
				line = "  --" + name
			}
		}
		io.WriteString(w, line)
	}
}

// usageError reports a usage error of the command: the message, then the usage, and
// returns exitSandgate.
func (f *cmdFlags) usageError(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sandgate %s: %s\n", f.name, fmt.Sprintf(format, args...))
	f.printUsage(e.stderr)
	return exitSandgate
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
		return nil, f.usageError(e, "wrong number of arguments"), false
	}
	return pos, 0, true
}

// splitShort expands combined one-letter boolean flags (-it into -i -t, as docker
// takes them) in the run of flags that starts args; it stops at the first argument
// that is not a flag or a flag's value, and at --.
func (f *cmdFlags) splitShort(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		if letters := a[1:]; len(letters) > 1 && !strings.HasPrefix(letters, "-") && f.allBool(letters) {
			for _, r := range letters {
				out = append(out, "-"+string(r))
			}
			continue
		}
		out = append(out, a)
		name := strings.TrimLeft(a, "-")
		if fl := f.Lookup(name); fl != nil && !strings.Contains(name, "=") && !isBool(fl) && i+1 < len(args) {
			i++
			out = append(out, args[i]) // the flag's value
		}
	}
	return out
}

// allBool reports whether every letter of letters is a boolean flag of f.
func (f *cmdFlags) allBool(letters string) bool {
	for _, r := range letters {
		fl := f.Lookup(string(r))
		if fl == nil || !isBool(fl) {
			return false
		}
	}
	return true
}

// isBool reports whether fl takes no value.
func isBool(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseError turns a flag error into an exit code: --help prints the usage to stdout
// and succeeds.
func (f *cmdFlags) parseError(e *env, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		f.printUsage(e.stdout)
		return 0
	}
	return f.usageError(e, "%v", err)
}

// client builds the SDK client from the flags and the environment. The first address
// is the SDK's base URL, the others its endpoints to fail over to.
func (f *cmdFlags) client(e *env) *sdk.Client {
	addrs := f.addresses(e)
	return sdk.New(addrs[0], f.tokenValue(e), &sdk.Options{
		MaxRetries: streamRetries, UserAgent: "sandgate-cli/" + version().short(), Endpoints: addrs[1:],
	})
}

// addresses returns the gateway addresses of --addr or $SANDGATE_ADDR (a comma-separated
// list, as etcdctl's --endpoints), each with a scheme; at least one.
func (f *cmdFlags) addresses(e *env) []string {
	list := f.addr
	if list == "" {
		list = e.getenv("SANDGATE_ADDR")
	}
	var out []string
	for _, addr := range strings.Split(list, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		out = append(out, addr)
	}
	if len(out) == 0 {
		out = []string{defaultAddr}
	}
	return out
}

func (f *cmdFlags) tokenValue(e *env) string {
	if f.token != "" {
		return f.token
	}
	return e.getenv("SANDGATE_TOKEN")
}

// fail prints err for a failed request and returns exitSandgate (exitInterrupted when
// the user interrupted).
func (f *cmdFlags) fail(ctx context.Context, e *env, err error) int {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintf(e.stderr, "sandgate %s: interrupted\n", f.name)
		return exitInterrupted
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
			fmt.Fprintf(e.stderr, "  (is a gateway running at %s? set $SANDGATE_ADDR or --addr)\n", strings.Join(f.addresses(e), ", "))
		}
	}
	return exitSandgate
}

// reportGap tells the user that the output bytes [from, to) of a stream will not be
// printed. Either the process's output buffer dropped them before they were read, or
// the node that kept them stopped running the process: a drain or a crash moved its
// sandbox, and output stays in the old node's buffer (the new owner has the process's
// exit, not its output). raw frames the line for a terminal in raw mode.
func reportGap(e *env, from, to int64, raw bool) {
	pre, post := "", "\n"
	if raw {
		pre, post = "\r\n", "\r\n"
	}
	fmt.Fprintf(e.stderr, "%ssandgate %s: %d bytes of output [%d, %d) lost: they left the output buffer, "+
		"or the node the sandbox moved from, before they could be read%s", pre, e.command, to-from, from, to, post)
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

// outputFlag is the --output (-o) flag of the listing and inspecting commands: table
// (for people) or json (for scripts). --json is kept as a short form of --output json.
type outputFlag struct {
	format string
	json   bool
}

// addOutput registers --output, -o and --json on f.
func (f *cmdFlags) addOutput() *outputFlag {
	o := &outputFlag{}
	f.StringVar(&o.format, "output", "table", "output `format`: table or json")
	f.StringVar(&o.format, "o", "table", "short for --output")
	f.BoolVar(&o.json, "json", false, "short for --output json")
	return o
}

// check reports whether JSON was asked for; ok is false (and the usage printed) when
// the format is unknown.
func (o *outputFlag) check(f *cmdFlags, e *env) (isJSON bool, code int, ok bool) {
	switch {
	case o.json || o.format == "json":
		return true, 0, true
	case o.format == "table":
		return false, 0, true
	}
	return false, f.usageError(e, "unknown output format %q (table or json)", o.format), false
}
