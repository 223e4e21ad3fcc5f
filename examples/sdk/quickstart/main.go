// Command quickstart is a tour of the sandgate Go SDK: it creates a sandbox, runs a
// command, starts a process and streams its output, shows that a session keeps its
// working directory and environment between commands, and deletes the sandbox.
//
// Run a gateway (sandgate serve), then:
//
//	SANDGATE_ADDR=http://127.0.0.1:7070 SANDGATE_TOKEN=... go run ./examples/sdk/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	addr := os.Getenv("SANDGATE_ADDR")
	if addr == "" {
		addr = "http://127.0.0.1:7070"
	}
	if err := run(ctx, addr, os.Getenv("SANDGATE_TOKEN"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run does the tour against the gateway at addr and writes what it sees to out.
func run(ctx context.Context, addr, token string, out io.Writer) error {
	c := sdk.New(addr, token, nil)

	// 1. A sandbox. The server picks the id (sb_…) since none is given.
	sb, _, err := c.CreateSandbox(ctx, sdk.CreateSandboxRequest{Labels: map[string]string{"example": "quickstart"}})
	if err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	fmt.Fprintf(out, "sandbox %s on node %s\n", sb.ID, sb.Node)
	defer func() {
		// Delete even when ctx was canceled, but do not hang on it.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.DeleteSandbox(dctx, sb.ID); err != nil {
			fmt.Fprintf(out, "delete sandbox: %v\n", err)
			return
		}
		fmt.Fprintf(out, "deleted %s\n", sb.ID)
	}()

	// 2. A stateless exec: one command, its output and exit code.
	res, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{Command: "echo hello from sandgate; exit 3"})
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	fmt.Fprintf(out, "exec: %q, exit code %d\n", strings.TrimSpace(res.Stdout), res.ExitCode)

	// 3. A process that outlives the request; its output is streamed until it exits.
	p, err := c.CreateProcess(ctx, sb.ID, sdk.CreateProcessRequest{
		Command: "for i in 1 2 3; do echo tick $i; sleep 0.1; done; echo done >&2",
		Tag:     "ticker",
	})
	if err != nil {
		return fmt.Errorf("start process: %w", err)
	}
	fmt.Fprintf(out, "process %s started\n", p.ID)
	// Chunks are not lines: keep each stream's partial last line until it ends.
	partial := map[string]string{}
	for ev, err := range c.ProcessOutput(ctx, sb.ID, p.ID, 0) {
		if err != nil {
			return fmt.Errorf("stream output: %w", err)
		}
		switch ev.Type {
		case sdk.OutputData:
			lines := strings.Split(partial[ev.Stream]+string(ev.Data), "\n")
			for _, line := range lines[:len(lines)-1] {
				fmt.Fprintf(out, "  %s: %s\n", ev.Stream, line)
			}
			partial[ev.Stream] = lines[len(lines)-1]
		case sdk.OutputGap:
			fmt.Fprintf(out, "  (%d bytes of output lost)\n", ev.To-ev.From)
		case sdk.OutputExit:
			code := -1
			if ev.ExitCode != nil {
				code = *ev.ExitCode
			}
			fmt.Fprintf(out, "process exited with code %d\n", code)
		}
	}

	// 4. A session: cd and export persist from one command to the next.
	s, err := c.CreateSession(ctx, sb.ID, sdk.CreateSessionRequest{})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	for _, cmd := range []string{"mkdir -p sub && cd sub && export GREETING=hi", `echo "$GREETING from $(basename "$PWD")"`} {
		res, err := c.ExecSession(ctx, sb.ID, s.ID, sdk.SessionExecRequest{Command: cmd})
		if err != nil {
			return fmt.Errorf("session exec: %w", err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("session command %q exited %d: %s", cmd, res.ExitCode, res.Stderr)
		}
		if o := strings.TrimSpace(res.Stdout); o != "" {
			fmt.Fprintf(out, "session: %s\n", o)
		}
	}
	return nil
}
