package cluster

import (
	"testing"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
