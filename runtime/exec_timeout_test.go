package runtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Under load, a timed-out exec must always report the timeout (exit 124), never the
// SIGKILL that ended it: the kill and its reason are recorded together.
func TestExecTimeoutAlwaysReported(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Go(func() {
			res, err := s.Exec(ctx, ExecOptions{Argv: []string{"sleep", "30"}, Timeout: 20 * time.Millisecond})
			if err != nil {
				t.Error(err)
				return
			}
			if !res.TimedOut || res.ExitCode != exitTimedOut {
				t.Errorf("timed out %v exit %d, want timed out with %d", res.TimedOut, res.ExitCode, exitTimedOut)
			}
		})
	}
	wg.Wait()
}
