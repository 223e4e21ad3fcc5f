package runtime

import (
	"context"
	"fmt"
)

// TerminalOptions are the settings of an interactive terminal.
type TerminalOptions struct {
	// ID is the caller's terminal id; the process gets tag "terminal:<ID>". Required.
	ID string
	// Cols and Rows are the initial size; 0 means 80x24.
	Cols, Rows uint16
	// Cwd is relative to the workspace, or absolute inside it; "" is the workspace.
	Cwd string
	// Env is overlaid on the sandbox env (after TERM=xterm-256color).
	Env map[string]string
	// Shell is the shell to run; "" means $SHELL from the environment, else bash, else
	// sh. It is started interactive (-i), so it prints a prompt.
	Shell string
}

// StartTerminal starts an interactive shell on a PTY: a process with tag
// "terminal:<id>", label "Terminal <id>" and TERM=xterm-256color. Making a terminal
// only once per id is the caller's job.
func (s *Sandbox) StartTerminal(ctx context.Context, o TerminalOptions) (*Process, error) {
	p, err := s.startTerminal(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("failed to start terminal: %w", err)
	}
	return p, nil
}

func (s *Sandbox) startTerminal(ctx context.Context, o TerminalOptions) (*Process, error) {
	if !validID(o.ID) {
		return nil, fmt.Errorf("%w: bad terminal id %q", ErrInvalid, o.ID)
	}
	size := WinSize{Cols: o.Cols, Rows: o.Rows}
	if size.Cols == 0 {
		size.Cols = 80
	}
	if size.Rows == 0 {
		size.Rows = 24
	}
	mid := map[string]string{"TERM": "xterm-256color"}
	shell := o.Shell
	if shell == "" {
		shell = s.terminalShell(overlay(s.env, mid, o.Env))
	}
	return s.start(ctx, StartOptions{
		Argv: []string{shell, "-i"}, Cwd: o.Cwd, Env: o.Env, PTY: &size,
		Tag: "terminal:" + o.ID, Label: "Terminal " + o.ID,
	}, mid)
}

// terminalShell picks $SHELL from env, else bash, else sh.
func (s *Sandbox) terminalShell(env map[string]string) string {
	list := envList(env)
	for _, sh := range []string{env["SHELL"], "bash", "sh"} {
		if sh == "" {
			continue
		}
		if p, err := lookPath(sh, list, s.dir); err == nil && executable(p) {
			return p
		}
	}
	return "/bin/sh"
}
