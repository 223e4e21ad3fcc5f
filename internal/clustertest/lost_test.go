package clustertest_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/linearize"
)

// The check of the scenarios can fail: a node that comes back from SIGKILL without
// its data (as an owner whose state was not replicated would), where a client makes
// the sandbox and its session again, loses acknowledged writes, and every object's
// history says so.
func TestLostStateDetected(t *testing.T) {
	c := startOne(t)
	n := c.Nodes[0]
	cl := setup(t, c, n, n, "lost1")
	cl.startPhase(t, 5, 2*time.Minute).wait(t)

	n.Kill(t)
	ents, err := os.ReadDir(n.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(n.DataDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	n.Restart(t)
	if _, o := cl.do(n, "POST", "/v1/sandboxes", map[string]string{"id": cl.sb}, http.StatusCreated); o != done {
		t.Fatalf("failed to create the sandbox again: %v", cl.errors)
	}
	if _, o := cl.do(n, "POST", "/v1/sandboxes/"+cl.sb+"/sessions", map[string]string{"id": cl.ss}, http.StatusCreated); o != done {
		t.Fatalf("failed to create the session again: %v", cl.errors)
	}
	cl.look(n) // before anyone writes again: the variable and directory are gone
	cl.startPhase(t, 3, 2*time.Minute).wait(t)
	cl.drain(t)

	err = cl.rec.Check(nil)
	failed := map[string]bool{}
	for _, e := range errorsOf(err) {
		var le *linearize.Error
		if errors.As(e, &le) && errors.Is(le, linearize.ErrNotLinearizable) {
			failed[le.Key] = true
		}
	}
	for _, key := range []string{cl.envKey(), cl.cwdKey(), cl.eventsKey(), cl.queueKey()} {
		if !failed[key] {
			t.Errorf("the lost state of %s went unnoticed (Check: %v)", key, err)
		}
	}
}

// errorsOf unpacks an errors.Join.
func errorsOf(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}
