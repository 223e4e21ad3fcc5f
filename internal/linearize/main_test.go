package linearize

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// linearize is imported by tests of any package, so it imports nothing of ours and
// not the testing package.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, ".", deptest.Rules{
		Forbidden: map[string]string{deptest.Ours: "linearize imports nothing of ours"},
		ForbiddenInOurs: map[string]string{
			"testing": "linearize is a library for tests, not a test helper: it needs no testing.TB",
		},
	})
}
