package actor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDiskHammer deactivates and activates one sandbox from several goroutines at
// once, each writing files through the files API, with files held open across
// deactivation now and then. An image mounted twice at once (an activation mounting it
// while the previous one is still unmounting it) would corrupt it: at the end every
// file written must read back and e2fsck must find the image clean.
func TestDiskHammer(t *testing.T) {
	n := diskNode(t, "")
	mustCreate(t, n, "ham")
	const workers, rounds = 4, 15
	ctx := tctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*rounds) // room for every error: a full channel would hang the hammer
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				name := fmt.Sprintf("w%d-r%d", w, r)
				if err := hammerWrite(ctx, n, name, r%5 == 0); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
				}
				// A deactivation queued behind another one fails as unavailable.
				if err := n.Deactivate(ctx, "ham"); err != nil && !errors.Is(err, ErrUnavailable) {
					errs <- fmt.Errorf("deactivate: %w", err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ws, err := n.Workspace(tctx(t), "ham")
	must(t, err)
	for w := range workers {
		for r := range rounds {
			name := fmt.Sprintf("w%d-r%d", w, r)
			f, _, err := ws.Open(name)
			if err != nil {
				t.Errorf("%s after the hammer: %v", name, err)
				continue
			}
			b := make([]byte, 64)
			k, _ := f.Read(b)
			_ = f.Close()
			if string(b[:k]) != name {
				t.Errorf("%s holds %q", name, b[:k])
			}
		}
	}
	_ = ws.Close()
	image := n.imagePath("ham")
	closeNode(t, n)
	wantUnmounted(t, n, image)
	out, err := exec.Command("e2fsck", "-fn", image).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck of the image after the hammer: %v\n%s", err, out)
	}
}

// hammerWrite writes name through the files API; with hold, it keeps the file open
// while another goroutine's deactivation may unmount the image (a lazy detach).
func hammerWrite(ctx context.Context, n *testNode, name string, hold bool) error {
	ws, err := n.Workspace(ctx, "ham")
	for retries := 0; errors.Is(err, ErrUnavailable) && retries < 10; retries++ {
		// Still held by a lazily detached mount, or the activation was deactivated
		// while this request was queued: what a client does with a 503.
		time.Sleep(100 * time.Millisecond)
		ws, err = n.Workspace(ctx, "ham")
	}
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := ws.WriteFile(name, strings.NewReader(name), nil); err != nil {
		return err
	}
	if hold {
		f, _, err := ws.Open(name)
		if err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		return f.Close()
	}
	return nil
}
