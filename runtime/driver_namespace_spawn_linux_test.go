package runtime

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/nsinit"
)

// TestNamespaceClonesIntoTrees checks that the namespace driver's init, with a user
// namespace too (its groups are then delegated to the namespace's root) and with a
// lease (trees below the freeze group), clones each exec's process straight into the
// tree's group, and that the process runs there.
func TestNamespaceClonesIntoTrees(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ userNS, lease bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		userNS := tc.userNS
		t.Run(fmt.Sprintf("userns=%v,lease=%v", tc.userNS, tc.lease), func(t *testing.T) {
			t.Parallel()
			d := NamespaceDriver{UserNS: tc.userNS}
			if tc.lease {
				d.Lease = NewLease()
				d.Lease.Extend(time.Now().Add(time.Hour))
			}
			s := newNSSandbox(t, &Config{Driver: d})
			h := s.h.(*nsHost)
			if got := h.in.SpawnPath(); got != nsinit.SpawnCloneInto {
				if !userNS && got == nsinit.SpawnFork {
					t.Skip("the init has no clone3 path here (build or kernel)")
				}
				t.Fatalf("the init spawns on the %v path, want %v", got, nsinit.SpawnCloneInto)
			}
			r, err := s.Exec(testCtx(t), ExecOptions{Argv: []string{"cat", "/proc/self/cgroup"}})
			if err != nil {
				t.Fatal(err)
			}
			var group string
			for _, l := range strings.Split(string(r.Stdout), "\n") {
				if v, ok := strings.CutPrefix(l, "0::"); ok {
					group = v
				}
			}
			// The group is relative to the hierarchy's root: <...>/<sandbox>/[trees/]t<n>.
			inSandbox := strings.Contains(group, "/"+filepath.Base(s.cg.v2)+"/")
			if r.ExitCode != 0 || !inSandbox || !strings.HasPrefix(filepath.Base(group), "t") || filepath.Base(group) == filepath.Base(h.home.dir) {
				t.Fatalf("the exec ran in %q (exit %d, %q); want a tree's group in %s, not the init's %s", group, r.ExitCode, r.Stderr, s.cg.v2, h.home.dir)
			}
		})
	}
}

// TestNamespaceDelegatedGroupsOutOfReach checks what makes delegating a sandbox's
// cgroups to its user namespace's root safe: nothing inside reaches a cgroup file. No
// cgroup hierarchy is mounted inside, and the init's fds (where a tree's group passes
// during a spawn) cannot be opened through /proc: the sandbox's processes lack the
// init's capabilities, so the kernel refuses them ptrace access to it.
func TestNamespaceDelegatedGroupsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newNSSandbox(t, &Config{Driver: NamespaceDriver{UserNS: true}})
	r, err := s.Exec(testCtx(t), ExecOptions{Command: `grep -c cgroup /proc/self/mountinfo
ls /proc/1/fd >/dev/null 2>&1 && echo listed
for f in /proc/1/fd/*; do readlink "$f" && echo "readable $f"; cat "$f" </dev/null >/dev/null 2>&1 && echo "opened $f"; done; true`})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(r.Stdout); out != "0\n" && out != "0\nlisted\n" {
		t.Fatalf("inside a sandbox: %q (stderr %q); want no cgroup mount and none of the init's fds readable", out, r.Stderr)
	}
}
