package sdk

import (
	"net"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) {
	// The Go runtime opens its netpoller fds (epoll, eventfd) on first network use and
	// keeps them; open them before leakcheck's baseline so they are not counted.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	leakcheck.Also(func() string { clustertest.Cleanup(); return "" }) // the binary move_test.go built
	leakcheck.Main(m)
}
