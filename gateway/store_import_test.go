package gateway

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/actor"
)

// TestImportLocalSandboxes: the records of a pre-cluster data directory move into
// the replicated store, except a sandbox whose write is fenced (another node owns
// it) and the node's own records; running it again changes nothing.
func TestImportLocalSandboxes(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *actor.BoltStore {
		s, err := actor.OpenBolt(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	local, repl := open("actors.db"), open("replicated.db")
	put := func(st actor.Storage, sb string, epoch uint64, kv ...string) {
		t.Helper()
		b := &actor.Batch{Sandbox: sb, Epoch: epoch}
		for i := 0; i < len(kv); i += 2 {
			b.Put([]byte(kv[i]), []byte(kv[i+1]))
		}
		if err := st.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	put(local, "alpha", 0, "meta", `{"tenant":"acme"}`, "ev/1", "one")
	put(local, "beta", 0, "meta", `{}`)
	put(local, "_node", 0, "seq", "7")
	put(repl, "beta", 10, "meta", `{"owner":"elsewhere"}`) // beta's newest epoch is 10
	epoch := func(string) uint64 { return 5 }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	for round := range 2 {
		n, err := importLocalSandboxes(ctx, local, repl, epoch, log)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 - round; n != want {
			t.Fatalf("round %d imported %d sandboxes, want %d", round, n, want)
		}
		if got := records(t, repl, "alpha"); got != "ev/1=one meta={\"tenant\":\"acme\"} " {
			t.Fatalf("round %d: replicated alpha = %q", round, got)
		}
		if got := records(t, local, "alpha"); got != "" {
			t.Fatalf("round %d: alpha still local: %q", round, got)
		}
		if got := records(t, local, "beta"); got != "meta={} " {
			t.Fatalf("round %d: fenced beta local = %q, want it kept", round, got)
		}
		if got := records(t, repl, "beta"); got != "meta={\"owner\":\"elsewhere\"} " {
			t.Fatalf("round %d: replicated beta = %q, want the owner's", round, got)
		}
		if got := records(t, local, "_node"); got != "seq=7 " {
			t.Fatalf("round %d: node records = %q, want them kept", round, got)
		}
	}
}

// records renders every record of sandbox sb as "k=v " in key order.
func records(t *testing.T, st actor.Storage, sb string) string {
	t.Helper()
	var out string
	err := st.Read(context.Background(), sb, func(r actor.Reader) error {
		r.Scan(nil, nil, func(k, v []byte) bool { out += string(k) + "=" + string(v) + " "; return true })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
