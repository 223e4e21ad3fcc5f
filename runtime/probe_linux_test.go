package runtime

import (
	"os"
	"testing"
)

// TestProbeNamespace: this machine (root, cgroup2, namespaces, idmapped mounts on the
// temp dir's file system) runs sandboxes in a user namespace, and the probe leaves
// nothing in dir.
func TestProbeNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := ProbeNamespace(testCtx(t), dir, "test-probe-"+randomHex(4), NamespaceDriver{Rootfs: ""})
	if err != nil {
		t.Fatalf("the namespace driver does not work here: %v", err)
	}
	if !d.UserNS {
		t.Errorf("probe chose no user namespace on a machine that has them")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v in its dir", ents)
	}
	bad, err := ProbeNamespace(testCtx(t), dir, "test-probe-"+randomHex(4), NamespaceDriver{Rootfs: "/no/such/dir"})
	if err == nil {
		t.Errorf("a probe with a missing rootfs worked: %+v", bad)
	}
}

// TestProbeIgnoresLease checks that ProbeNamespace works under an expired lease (it
// asks the machine, not the node) and hands each caller its own Lease back, the
// remembered answer included.
func TestProbeIgnoresLease(t *testing.T) {
	t.Parallel()
	dir, scope := t.TempDir(), "test-probe-"+randomHex(4)
	first, second := NewLease(), NewLease()
	d, err := ProbeNamespace(testCtx(t), dir, scope, NamespaceDriver{Lease: first})
	if err != nil {
		t.Fatalf("probe under an expired lease: %v", err)
	}
	if d.Lease != first {
		t.Errorf("the probe returned lease %p, want the caller's %p", d.Lease, first)
	}
	d, err = ProbeNamespace(testCtx(t), dir, scope, NamespaceDriver{Lease: second})
	if err != nil || d.Lease != second {
		t.Errorf("the remembered probe returned lease %p (%v), want the caller's %p", d.Lease, err, second)
	}
}
