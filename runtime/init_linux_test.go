package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/nsinit"
)

// TestMaybeRunInit starts a sandbox init from this test binary, which works only if
// TestMain hands the re-executed binary to MaybeRunInit.
func TestMaybeRunInit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := nsinit.Start(ctx, nsinit.Config{ID: "sb-hook", Workspace: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := in.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ch, err := in.Spawn(ctx, nsinit.SpawnRequest{Argv: []string{"sh", "-c", "exit 5"}})
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	if st, err := ch.Wait(ctx); err != nil || st.Code != 5 {
		t.Fatalf("Wait = %v, %v; want exit status 5", st, err)
	}
}
