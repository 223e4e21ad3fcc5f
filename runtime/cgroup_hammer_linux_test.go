package runtime

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestCgroupHammer: execs and processes start and end in one sandbox from many
// goroutines while Close races them; every call ends cleanly (or with ErrClosed),
// tree numbers never collide, and Close leaves no group and no process.
func TestCgroupHammer(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s, err := New(&Config{Dir: t.TempDir(), KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	const workers, rounds = 6, 8
	errs := make(chan error, workers*rounds*2)
	started := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				if i == 2 {
					started <- struct{}{}
				}
				if w%2 == 0 {
					res, err := s.Exec(ctx, ExecOptions{Command: "setsid sleep 300 >/dev/null 2>&1 & echo x"})
					if err == nil && res.ExitCode != 0 && res.ExitCode != 128+9 { // 137: Close killed it
						err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
					}
					errs <- err
					continue
				}
				p, err := s.Start(ctx, StartOptions{Command: "setsid sleep 300 >/dev/null 2>&1 & exec sleep 300"})
				if err == nil {
					err = s.Remove(ctx, p.ID())
				}
				errs <- err
			}
		})
	}
	for range workers {
		<-started
	}
	dirs := append([]string{s.cg.v2}, s.cg.v1dirs()...)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) {
			t.Errorf("call: %v", err)
		}
	}
	for _, d := range dirs {
		if fileExists(d) {
			t.Errorf("group %s left after Close", d)
		}
	}
}
