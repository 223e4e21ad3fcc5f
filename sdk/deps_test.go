package sdk

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
)

// TestDeps keeps the SDK a pure client: it links none of the server's packages.
func TestDeps(t *testing.T) {
	t.Parallel()
	r := deptest.Layer("sdk")
	for _, p := range []string{"runtime", "plugins", "cluster", "actor"} {
		r.Forbidden[deptest.Ours+p] = "the SDK is a client and links no server package"
	}
	deptest.Check(t, ".", r)
}
