package actor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// putFile writes a file into sb's workspace directory, as a process there would.
func putFile(t *testing.T, n *testNode, sb, name string) string {
	t.Helper()
	p := filepath.Join(n.workspaceDir(sb), name)
	must(t, os.WriteFile(p, []byte("user data"), 0o644))
	return p
}

func wantPath(t *testing.T, p string, want bool) {
	t.Helper()
	_, err := os.Lstat(p)
	if got := err == nil; got != want {
		t.Fatalf("%s exists: %v, want %v (%v)", p, got, want, err)
	}
}

// TestDeleteUnknownOutcomeKeepsFiles: a delete whose commit outcome is unknown removes
// nothing while nobody knows whether it landed. Once storage has said: one that never
// landed keeps every file, its sandbox intact, after its next activation too; one
// that landed has its files removed, with no request needed (the index worker reads
// what landed once the failed activation has gone).
func TestDeleteUnknownOutcomeKeepsFiles(t *testing.T) {
	t.Parallel()
	bothOutcomes(t, func(t *testing.T, apply bool) {
		n, store := newOutcomeNode(t)
		mustCreate(t, n, "d1")
		f := putFile(t, n, "d1", "keep.txt")
		store.arm("d1", apply)
		wantUnknown(t, "delete", n.DeleteSandbox(tctx(t), "d1"))
		if apply {
			eventually(t, 20*time.Second, "the files of the landed delete to go", func() bool {
				_, err := os.Lstat(n.workspaceDir("d1"))
				return errors.Is(err, fs.ErrNotExist)
			})
			_, err := n.GetSandbox(tctx(t), "d1")
			wantErr(t, err, ErrNotFound)
			wantPath(t, n.deletingPath("d1"), false)
			return
		}
		wantPath(t, f, true)
		_, err := n.GetSandbox(tctx(t), "d1")
		must(t, err)
		got, err := os.ReadFile(f)
		must(t, err)
		if string(got) != "user data" {
			t.Fatalf("file holds %q", got)
		}
		wantPath(t, n.deletingPath("d1"), false) // settled by the activation
	})
}

// TestDeleteRemovalFails: a delete that committed but could not remove the files (as
// a crash between the commit and the removal) leaves them marked; a create of the
// same id meanwhile never gets them (it clears them first, or refuses), and the
// next Open removes what is left.
func TestDeleteRemovalFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		recreate bool
	}{
		{name: "swept at the next open", recreate: false},
		{name: "cleared by a create of the same id", recreate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newTestNode(t, nil)
			mustCreate(t, n, "d2")
			fault := errors.New("injected: removal stopped")
			n.dropFault = func(string) error { return fault }
			f := putFile(t, n, "d2", "old.txt")
			must(t, n.DeleteSandbox(tctx(t), "d2")) // durable: answered even though the files stayed
			wantPath(t, f, true)
			wantPath(t, n.deletingPath("d2"), true)
			if _, err := n.GetSandbox(tctx(t), "d2"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get after delete: %v, want ErrNotFound", err)
			}
			if tc.recreate {
				// The old files cannot be cleared: the create refuses rather than hand them out.
				_, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "d2"})
				wantErr(t, err, ErrUnavailable)
				wantPath(t, f, true)
				n.dropFault = nil
				mustCreate(t, n, "d2")
				wantPath(t, f, false)
				wantPath(t, n.deletingPath("d2"), false)
				wantEmptyWorkspace(t, n, "d2")
				g := putFile(t, n, "d2", "new.txt")
				closeNode(t, n)
				n2 := reopen(t, n.cfg, n.clock)
				wantPath(t, g, true) // the sweep never touches a sandbox that exists
				checkFound(t, n2, "d2")
				return
			}
			closeNode(t, n)
			n2 := reopen(t, n.cfg, n.clock)
			wantPath(t, f, false)
			wantPath(t, n2.workspaceDir("d2"), false)
			wantPath(t, n2.deletingPath("d2"), false)
		})
	}
}

func wantEmptyWorkspace(t *testing.T, n *testNode, sb string) {
	t.Helper()
	ents, err := os.ReadDir(n.workspaceDir(sb))
	must(t, err)
	if len(ents) != 0 {
		t.Fatalf("workspace of %s holds %d entries, want none: %v", sb, len(ents), ents[0].Name())
	}
}

// TestDeleteThenCreateSameID: a sandbox created again right after its delete starts
// with an empty workspace and keeps it, also when the delete and the create were
// queued together and drained into one group (the delete ends its group, so the
// create runs once the old files are gone, not before the delete is durable).
func TestDeleteThenCreateSameID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		sameGroup bool
	}{
		{name: "one after the other", sameGroup: false},
		{name: "queued into one group", sameGroup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var store *holdStore
			n := newTestNode(t, func(c *Config) {
				bolt, err := OpenBolt(filepath.Join(c.DataDir, "hold.db"))
				must(t, err)
				t.Cleanup(func() { _ = bolt.Close() })
				store = &holdStore{Storage: bolt}
				c.Storage = store
			})
			mustCreate(t, n, "d3")
			f := putFile(t, n, "d3", "old.txt")
			if !tc.sameGroup {
				must(t, n.DeleteSandbox(tctx(t), "d3"))
				mustCreate(t, n, "d3")
			} else {
				held, release := store.arm("d3")
				var wg sync.WaitGroup
				errs := make([]error, 3)
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[0] = n.PostMessage(tctx(t), "d3", []byte(`"x"`)) }()
				<-held // the actor is committing; what follows queues behind it
				// The post is counted while its group commits if the actor's goroutine
				// ran it rather than the caller inline: count from here, so the create
				// starts only once the delete is queued ahead of it.
				base := queuedNow(t, n, "d3")
				wg.Add(1)
				go func() { defer wg.Done(); errs[1] = n.DeleteSandbox(tctx(t), "d3") }()
				waitQueued(t, n, "d3", base+1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, created, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "d3"})
					if err == nil && !created {
						err = errors.New("create answered the old sandbox")
					}
					errs[2] = err
				}()
				waitQueued(t, n, "d3", base+2)
				close(release)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("request %d (post, delete, create): %v", i, err)
					}
				}
			}
			wantPath(t, f, false)
			wantEmptyWorkspace(t, n, "d3")
			wantPath(t, n.deletingPath("d3"), false)
			g := putFile(t, n, "d3", "new.txt")
			if _, err := n.GetSandbox(tctx(t), "d3"); err != nil {
				t.Fatal(err)
			}
			wantPath(t, g, true)
		})
	}
}

// queuedNow is how many requests sb's activation has queued or in service.
func queuedNow(t *testing.T, n *testNode, sb string) int {
	t.Helper()
	a := n.active(sb)
	if a == nil {
		t.Fatalf("sandbox %s has no activation", sb)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queued
}

// waitQueued waits until sb's activation has at least k requests queued or in service.
func waitQueued(t *testing.T, n *testNode, sb string, k int) {
	t.Helper()
	eventually(t, 20*time.Second, "requests to queue", func() bool {
		a := n.active(sb)
		if a == nil {
			return false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.queued >= k
	})
}

// holdStore holds the next Write of one sandbox until released, then writes it.
type holdStore struct {
	Storage
	mu      sync.Mutex
	sandbox string
	held    chan struct{}
	release chan struct{}
}

// arm makes the next Write of sb wait: held is closed when it starts, and it goes on
// once release is closed.
func (s *holdStore) arm(sb string) (held, release chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sandbox, s.held, s.release = sb, make(chan struct{}), make(chan struct{})
	return s.held, s.release
}

func (s *holdStore) Write(ctx context.Context, b *Batch) error {
	s.mu.Lock()
	hit := s.sandbox != "" && b.Sandbox == s.sandbox
	held, release := s.held, s.release
	if hit {
		s.sandbox, s.held, s.release = "", nil, nil
	}
	s.mu.Unlock()
	if hit {
		close(held)
		<-release
	}
	return s.Storage.Write(ctx, b)
}

// TestImportSettlesDeleteMarker: a workspace a planned move brings in is the living
// sandbox's, so a delete marker this node kept for the id (a delete of an earlier
// stay here that never landed) is dropped rather than left to act on it later.
func TestImportSettlesDeleteMarker(t *testing.T) {
	t.Parallel()
	a, b, _, _ := twoNodes(t, "imdel")
	ctx := tctx(t)
	mustCreate(t, a, "im")
	putFile(t, a, "im", "f.txt")
	must(t, a.Deactivate(ctx, "im"))
	must(t, b.markDeleting("im")) // what a failed delete of an earlier stay on b left
	streamWorkspace(t, a.Node, b.Node, "im")
	wantPath(t, b.deletingPath("im"), false)
	wantPath(t, filepath.Join(b.workspaceDir("im"), "f.txt"), true)
}
