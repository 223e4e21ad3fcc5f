package nsinit

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
)

// TestDeps keeps the init small and free-standing: the standard library and x/sys only.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, ".", deptest.Rules{Forbidden: map[string]string{
		deptest.Ours: "the init imports nothing of ours",
		"testing":    "do not use the testing package in production code",
	}})
}
