package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sandgate/sandgate/runtime"
)

// Runtime driver names (Config.Runtime).
const (
	RuntimeNamespace = "namespace"
	RuntimeLocal     = "local"
)

// chooseDriver picks the runtime driver of c.Runtime and says at start which one runs
// and why: "" takes the namespace driver where a probe sandbox runs (see
// runtime.ProbeNamespace) and the local one otherwise; "namespace" fails the start
// when the probe does; "local" runs processes on the host without isolation.
//
// The namespace driver's sandboxes hold lease, the node's cluster lease as the
// server last renewed it: their inits freeze them when it runs out.
func chooseDriver(ctx context.Context, c *Config, lease *runtime.Lease) (runtime.Driver, error) {
	log := c.Logger
	if c.Runtime == RuntimeLocal {
		log.Warn("runtime: local driver: sandboxes run on the host as this server's user, without isolation (chosen by --runtime local)")
		return runtime.LocalDriver{}, nil
	}
	if c.Runtime != "" && c.Runtime != RuntimeNamespace {
		return nil, fmt.Errorf("gateway: unknown runtime %q (namespace or local)", c.Runtime)
	}
	d, err := runtime.ProbeNamespace(ctx, filepath.Join(c.DataDir, "workspaces"), c.NodeID, runtime.NamespaceDriver{Rootfs: c.Rootfs, Lease: lease})
	if err != nil {
		if c.Runtime == RuntimeNamespace {
			return nil, fmt.Errorf("failed to start the namespace runtime: %w", err)
		}
		log.Warn("runtime: local driver: sandboxes run on the host as this server's user, without isolation, because the namespace driver does not work here",
			"why", err.Error())
		return runtime.LocalDriver{}, nil
	}
	log.Info("runtime: namespace driver: each sandbox has its own pid, mount, uts, ipc and network namespaces and cgroups",
		slog.Bool("user_namespace", d.UserNS), slog.String("rootfs", rootfsName(d.Rootfs)))
	return d, nil
}

func rootfsName(dir string) string {
	if dir == "" {
		return "host /usr, /etc, /opt (read-only)"
	}
	return dir
}
