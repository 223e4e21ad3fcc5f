package webui

import (
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
)

func TestDeps(t *testing.T) {
	t.Parallel()
	r := deptest.Layer("webui")
	r.Forbidden[deptest.Ours] = "webui is a leaf: it imports nothing of ours"
	deptest.Check(t, ".", r)
}
