package nsinit

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHammer spawns, signals and waits from many goroutines at once on one init: every
// process must report its own status.
func TestHammer(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	const workers, each = 8, 25
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs <- hammerWorker(t, in, w, each)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func hammerWorker(t *testing.T, in *Init, w, n int) error {
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		code := (w*n + i) % 200
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sh", "-c", "exit " + strconv.Itoa(code)}})
		if err != nil {
			return err
		}
		killed := i%5 == 0
		if killed {
			if err := ch.Signal(ctx, unix.SIGKILL); err != nil && !errors.Is(err, ErrExited) {
				return err
			}
		}
		st, err := ch.Wait(ctx)
		switch {
		case err != nil:
			return err
		case st.Code == code && st.Signal == 0:
		case killed && st.Signal == unix.SIGKILL:
		default:
			return fmt.Errorf("worker %d spawn %d: %v, want exit status %d", w, i, st, code)
		}
	}
	return nil
}

// TestCloseDuringSpawns closes an init while goroutines spawn on it: every call ends
// with a result or ErrClosed, none hangs, and nothing is left behind.
func TestCloseDuringSpawns(t *testing.T) {
	t.Parallel()
	in, err := Start(testCtx(t), Config{ID: "sb-race", Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	requireNamespaces(t, in.PID())
	ns := nsOf(t, in.PID())
	ctx := testCtx(t)
	started := make(chan struct{}, 4)
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for i := 0; ; i++ {
				ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sleep", "1000"}})
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					errs <- err
					return
				}
				if _, err := ch.Wait(ctx); !errors.Is(err, ErrClosed) {
					errs <- fmt.Errorf("Wait of a running process at Close = %v, want ErrClosed", err)
					return
				}
			}
		}()
	}
	for w := 0; w < 4; w++ {
		<-started
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("a spawner ended with %v, want ErrClosed", err)
		}
	}
	waitNoneIn(t, ns)
}
