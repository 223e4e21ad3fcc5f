package cluster

import (
	"testing"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestMain fails the package if a test leaves a process behind: the binary is a child
// subreaper, so a node the script orphaned would be found.
func TestMain(m *testing.M) { leakcheck.Main(m) }
