package runtime

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestSessionHammer has many goroutines exec, read Info and Snapshot, and finally
// Close, all at once: every call either runs correctly or reports a dead session.
func TestSessionHammer(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	sessRun(t, s, "mkdir -p d0 d1 d2")
	const workers, perWorker = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, dead := 0, 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				c := SessionCommand{
					Command: fmt.Sprintf(`printf '%%s %%s' "$W" "${PWD##*/}"; export LAST=%d`, w),
					Env:     map[string]string{"W": fmt.Sprint(w, "-", i)},
					Cwd:     fmt.Sprintf("d%d", i%3),
				}
				r, err := s.Exec(sessTestCtx(t), c)
				mu.Lock()
				switch {
				case errors.Is(err, ErrSessionDead):
					dead++
				case err != nil:
					t.Errorf("exec: %v", err)
				case string(r.Stdout) != fmt.Sprintf("%d-%d d%d", w, i, i%3):
					t.Errorf("worker %d call %d: %q", w, i, r.Stdout)
				default:
					done++
				}
				mu.Unlock()
				_ = s.Info()
				_ = s.Snapshot()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sessWaitFor(t, "some commands", func() bool { return s.Info().Commands >= workers*perWorker/2 })
		if err := s.Close(sessTestCtx(t)); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	wg.Wait()
	if done < workers*perWorker/4 || done+dead != workers*perWorker {
		t.Errorf("done %d dead %d of %d", done, dead, workers*perWorker)
	}
}
