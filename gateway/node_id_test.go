package gateway

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// uuidPattern is what nodeIDFor makes: a random (version 4) UUID.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNodeIDKeptInDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id, err := nodeIDFor(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !uuidPattern.MatchString(id) {
		t.Fatalf("node id %q is not a random UUID", id)
	}
	again, err := nodeIDFor(dir, "")
	if err != nil || again != id {
		t.Fatalf("second start: %q, %v; want the same id %q", again, err, id)
	}
	other, err := nodeIDFor(t.TempDir(), "")
	if err != nil || other == id {
		t.Fatalf("another data dir got %q, %v; want an id of its own", other, err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeIDFile), []byte("given\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if kept, _ := nodeIDFor(dir, ""); kept != "given" {
		t.Fatalf("an id in the file: got %q, want it kept", kept)
	}
}

// TestGivenNodeIDKept: a node started with --node-id keeps it in its data directory,
// so a restart without the flag resumes it, and one with another id is refused.
func TestGivenNodeIDKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if id, err := nodeIDFor(dir, "nodex"); err != nil || id != "nodex" {
		t.Fatalf("first start: %q, %v", id, err)
	}
	if id, err := nodeIDFor(dir, ""); err != nil || id != "nodex" {
		t.Fatalf("restart without --node-id: %q, %v; want nodex", id, err)
	}
	if id, err := nodeIDFor(dir, "nodex"); err != nil || id != "nodex" {
		t.Fatalf("restart with the same id: %q, %v", id, err)
	}
	if id, err := nodeIDFor(dir, "nodey"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"nodex"`) {
		t.Fatalf("restart with another id: %q, %v; want ErrConfig naming nodex", id, err)
	}
}

// TestServerDefaultNodeID: a server without Config.NodeID names itself with the id
// kept in its data directory.
func TestServerDefaultNodeID(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.DataDir, c.NodeID = data, "" }})
	var sb struct{ Node string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "nid"}).json(t, &sb)
	kept, err := os.ReadFile(filepath.Join(data, nodeIDFile))
	if err != nil || !uuidPattern.MatchString(sb.Node) || sb.Node+"\n" != string(kept) {
		t.Fatalf("sandbox node %q, kept id %q (%v); want the node's UUID, kept in the data dir", sb.Node, kept, err)
	}
}
