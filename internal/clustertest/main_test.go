package clustertest

import (
	"net"
	"testing"

	"github.com/sandgate/sandgate/internal/deptest"
	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) {
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close() // open the runtime's netpoller fds before leakcheck's baseline
	}
	leakcheck.Also(func() string { Cleanup(); return "" })
	leakcheck.Main(m)
}

// clustertest drives the server as a black box: it imports nothing of ours but the
// build of cmd/sandgate.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, ".", deptest.Rules{
		Forbidden: map[string]string{deptest.Ours: "clustertest drives serve as a process; it imports nothing of ours"},
	})
}
