package runtime

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recordingDriver wraps LocalDriver and records what its host was asked to start.
type recordingDriver struct {
	LocalDriver
	mu     sync.Mutex
	spawns []spawn
}

func (d *recordingDriver) open(ctx context.Context, s *Sandbox) (host, error) {
	h, err := d.LocalDriver.open(ctx, s)
	return recordingHost{host: h, d: d}, err
}

type recordingHost struct {
	host
	d *recordingDriver
}

func (h recordingHost) start(ctx context.Context, sp *spawn) (leader, error) {
	h.d.mu.Lock()
	h.d.spawns = append(h.d.spawns, *sp)
	h.d.mu.Unlock()
	return h.host.start(ctx, sp)
}

func TestDriverUsed(t *testing.T) {
	t.Parallel()
	d := &recordingDriver{}
	s := newTestSandbox(t, &Config{Driver: d})
	ctx := testCtx(t)
	if _, err := s.Exec(ctx, ExecOptions{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(ctx, StartOptions{Command: "true", PTY: &WinSize{Cols: 10, Rows: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := s.NewSession(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	sp := d.spawns
	if len(sp) != 3 || sp[0].pty != nil || sp[1].pty == nil || sp[1].argv[0] != "/bin/sh" || sp[0].dir != s.Dir() ||
		len(sp[2].extra) != 1 || !strings.HasSuffix(sp[2].argv[0], "bash") {
		t.Errorf("spawns %+v", sp)
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	tests := []struct {
		name string
		prog string
		env  []string
		want string
		err  error
	}{
		{name: "found in PATH", prog: "sh", env: []string{"PATH=" + filepath.Dir(sh)}, want: filepath.Join(filepath.Dir(sh), "sh")},
		{name: "not in PATH", prog: "sh", env: []string{"PATH=/nonexistent"}, err: exec.ErrNotFound},
		{name: "directory is not a program", prog: "tmp", env: []string{"PATH=/"}, err: exec.ErrNotFound},
		{name: "slash used as is", prog: "./x", env: nil, want: "./x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := lookPath(tt.prog, tt.env, "/")
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("lookPath = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestTerminalShell(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	sh, _ := exec.LookPath("sh")
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "SHELL wins", env: map[string]string{"SHELL": sh, "PATH": filepath.Dir(bash)}, want: sh},
		{name: "bash by default", env: map[string]string{"PATH": filepath.Dir(bash)}, want: filepath.Join(filepath.Dir(bash), "bash")},
		{name: "missing SHELL falls back", env: map[string]string{"SHELL": "/no/such/shell", "PATH": filepath.Dir(bash)}, want: filepath.Join(filepath.Dir(bash), "bash")},
		{name: "nothing found", env: map[string]string{"PATH": "/nonexistent"}, want: "/bin/sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.terminalShell(tt.env); got != tt.want {
				t.Errorf("shell %q, want %q", got, tt.want)
			}
		})
	}
}
