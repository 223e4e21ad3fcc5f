package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeGroups lists the tree groups under the sandbox's cgroup2 group.
func treeGroups(tb testing.TB, s *Sandbox) []string {
	tb.Helper()
	ents, err := os.ReadDir(s.cg.v2)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "t") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCgroupTreeReuse: a tree that ends with its leader leaves its group for the next
// tree, which is contained as exactly (a setsid'd grandchild dies with it); a group
// that had to be killed is removed, never reused (the kernel would kill every process
// started into it), so the trees after it run.
func TestCgroupTreeReuse(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s := newTestSandbox(t, nil)
	run := func(command string, want int) {
		t.Helper()
		res, err := s.Exec(testCtx(t), ExecOptions{Command: command})
		if err != nil || res.ExitCode != want {
			t.Fatalf("exec %q: %v, exit %d, want %d", command, err, res.ExitCode, want)
		}
	}
	// The namespace driver's init has a group of its own from the start.
	before, made := treeGroups(t, s), s.cg.next.Load()
	trees := func() []string {
		return slices.DeleteFunc(treeGroups(t, s), func(g string) bool { return slices.Contains(before, g) })
	}
	for range 3 {
		run("true", 0)
	}
	if got := trees(); len(got) != 1 || s.cg.next.Load()-made != 1 {
		t.Fatalf("after 3 execs: groups %q, %d made; want one, reused", got, s.cg.next.Load()-made)
	}
	_ = os.Remove(filepath.Join(s.Dir(), "pid"))
	run(escapeeScript+"true", 0) // reuses t1, and kills it at the end
	pid := escapeePID(t, s, s.Dir())
	if !pidGone(pid) {
		t.Errorf("setsid grandchild %d in a reused group still runs after Exec returned", pid)
	}
	if got := trees(); len(got) != 0 {
		t.Errorf("killed groups %q kept", got)
	}
	for range 3 {
		run("exit 3", 3) // in a new group; a kill on the old one would make it 137
	}
	if got := trees(); len(got) != 1 {
		t.Errorf("groups %q, want one spare", got)
	}
}

// TestCgroupTreeProcsKept: a tree's cgroup.procs is opened once and kept with its group
// as a spare, so the next tree on that group needs no open (the namespace driver hands
// it to the init on every spawn).
func TestCgroupTreeProcsKept(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s := newTestSandbox(t, nil)
	t1, err := s.cg.newTree()
	if err != nil {
		t.Fatal(err)
	}
	f1, err := t1.procsFile()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := t1.procsFile(); err != nil || again != f1 {
		t.Fatalf("second procsFile: %p, %v; want the first, %p", again, err, f1)
	}
	dir := t1.dir
	t1.remove() // empty: kept as a spare, with its cgroup.procs
	t2, err := s.cg.newTree()
	if err != nil {
		t.Fatal(err)
	}
	defer t2.remove()
	f2, err := t2.procsFile()
	if err != nil || t2.dir != dir || f2 != f1 {
		t.Fatalf("next tree: group %s, procs %p, %v; want %s reused with %p", t2.dir, f2, err, dir, f1)
	}
	if _, err := t1.procsFile(); err == nil {
		t.Fatal("the removed tree still hands out its group's cgroup.procs")
	}
}

// TestCgroupTreeSpares: a sandbox keeps the groups of eight trees that ended together
// (eight concurrent execs), so the next eight trees make no new group.
func TestCgroupTreeSpares(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s := newTestSandbox(t, nil)
	const n = 8
	trees := make([]*treeCgroup, n)
	for i := range trees {
		tr, err := s.cg.newTree()
		if err != nil {
			t.Fatal(err)
		}
		trees[i] = tr
	}
	for _, tr := range trees {
		tr.remove()
	}
	made := s.cg.next.Load()
	for i := range trees {
		tr, err := s.cg.newTree()
		if err != nil {
			t.Fatal(err)
		}
		trees[i] = tr
	}
	for _, tr := range trees {
		tr.remove()
	}
	if got := s.cg.next.Load() - made; got != 0 {
		t.Fatalf("%d trees after %d ended together made %d new groups, want 0 (all reused)", n, n, got)
	}
}
