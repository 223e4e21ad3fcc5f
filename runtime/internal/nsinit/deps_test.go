package nsinit

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
)

// TestDeps keeps the init small and free-standing: the standard library, x/sys and
// the /proc reader it shares with the runtime.
func TestDeps(t *testing.T) {
	t.Parallel()
	rules := deptest.Rules{Forbidden: map[string]string{"testing": "do not use the testing package in production code"}}
	for _, p := range []string{"runtime", "actor", "gateway", "plugins", "cluster", "sdk", "internal/deptest"} {
		rules.Forbidden[deptest.Ours+p] = "the init imports nothing of ours but runtime/internal/procfs"
	}
	deptest.Check(t, ".", rules)
}
