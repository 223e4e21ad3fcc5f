package runtime

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestWriteBlocked: input to a process that does not read it fails with
// ErrInputBlocked once the writer's context ends, instead of hanging; other writers
// give up within their own bound too, output and Info go on, and the process stays
// killable. Pipes and a PTY alike.
func TestWriteBlocked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pty  *WinSize
	}{
		{name: "pipes"},
		{name: "pty", pty: &WinSize{Cols: 80, Rows: 24}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{KillGrace: 100 * time.Millisecond})
			ctx := testCtx(t)
			// Prints a line, then sleeps without reading its input.
			p, err := s.Start(ctx, StartOptions{Command: "echo started; exec sleep 1000", PTY: tc.pty})
			if err != nil {
				t.Fatal(err)
			}
			sub := p.Subscribe(0)
			defer sub.Close()
			waitOutput(t, ctx, sub, "started")
			input := bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef012345678901234\n"), 16<<10) // 1 MiB
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
					defer cancel()
					_, err := p.WriteContext(wctx, input, 0)
					errs <- err
				}()
			}
			for range 2 {
				select {
				case err := <-errs:
					if !errors.Is(err, ErrInputBlocked) {
						t.Fatalf("WriteContext: %v, want ErrInputBlocked", err)
					}
				case <-ctx.Done():
					t.Fatal("a write to a process that does not read never returned")
				}
			}
			if info := p.Info(); info.Status != StatusRunning {
				t.Fatalf("status %s", info.Status)
			}
			if err := p.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Write([]byte("x")); !errors.Is(err, ErrExited) {
				t.Fatalf("Write after exit: %v", err)
			}
		})
	}
}
