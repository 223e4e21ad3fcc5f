package cluster

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
)

func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, ".", deptest.Layer("cluster"))
}
