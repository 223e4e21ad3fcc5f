package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// ProbeNamespace finds out whether sandboxes can run on the namespace driver here,
// for workspaces in directory dir (made if missing), by running one: it starts a
// sandbox in a temporary directory of dir, runs `id -u` in it and checks the answer,
// first with a user namespace (NamespaceDriver.UserNS), then without. It returns the
// driver that worked, with d's other fields kept, or an error saying why neither did.
// The probe's sandbox ignores d.Lease: an expired lease does not fail it.
// The sandbox's cgroups are made in scope (see Config.Scope) and removed.
//
// The answer depends on the kernel, the privileges of this process and dir's file
// system (idmapped mounts), so it is remembered per dir for the life of the process.
func ProbeNamespace(ctx context.Context, dir, scope string, d NamespaceDriver) (NamespaceDriver, error) {
	key := probeKey{dir: dir, scope: scope, rootfs: d.Rootfs, uid: d.UID, gid: d.GID}
	if v, ok := probes.Load(key); ok {
		r := v.(probeResult)
		r.d.Lease = d.Lease // the caller's, not the first prober's
		return r.d, r.err
	}
	r := probeResult{}
	r.d, r.err = probeNamespace(ctx, dir, scope, d)
	probes.Store(key, r)
	return r.d, r.err
}

type probeKey struct {
	dir, scope, rootfs string
	uid, gid           int
}

type probeResult struct {
	d   NamespaceDriver
	err error
}

var probes sync.Map // probeKey → probeResult

func probeNamespace(ctx context.Context, dir, scope string, d NamespaceDriver) (NamespaceDriver, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return d, err
	}
	d.UserNS = true
	errUserNS := probeOnce(ctx, dir, scope, d)
	if errUserNS == nil {
		return d, nil
	}
	d.UserNS = false
	if err := probeOnce(ctx, dir, scope, d); err != nil {
		return d, fmt.Errorf("failed to run a sandbox in namespaces: %w (with a user namespace: %v)", err, errUserNS)
	}
	return d, nil
}

// probeOnce runs `id -u` in a sandbox of its own on d.
func probeOnce(ctx context.Context, dir, scope string, d NamespaceDriver) (err error) {
	d.Lease = nil // the probe asks the machine, whatever the node's lease says
	ws, err := os.MkdirTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(ws)) }()
	s, err := New(&Config{Dir: ws, Driver: d, ID: "probe", Scope: scope})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close(context.Background())) }()
	res, err := s.Exec(ctx, ExecOptions{Argv: []string{"id", "-u"}})
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0 || string(res.Stdout) != fmt.Sprintf("%d\n", d.UID):
		return fmt.Errorf("id -u in the sandbox: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	return nil
}
