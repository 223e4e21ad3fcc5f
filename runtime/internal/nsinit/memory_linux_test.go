package nsinit

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mapping is one line of /proc/<pid>/smaps with the figures the memory tests read.
type mapping struct {
	start, end uint64
	perms      string
	name       string
	anon       int // Anonymous, KiB
	dirty      int // Private_Dirty, KiB
	rss        int // Rss, KiB
}

// smaps reads /proc/<pid>/smaps.
func smaps(tb testing.TB, pid int) []mapping {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if !strings.HasSuffix(fs[0], ":") { // a mapping's first line: range perms offset dev inode [name]
			var m mapping
			lo, hi, _ := strings.Cut(fs[0], "-")
			m.start, _ = strconv.ParseUint(lo, 16, 64)
			m.end, _ = strconv.ParseUint(hi, 16, 64)
			if len(fs) > 1 {
				m.perms = fs[1]
			}
			if len(fs) > 5 {
				m.name = strings.Join(fs[5:], " ")
			}
			out = append(out, m)
			continue
		}
		if len(out) == 0 || len(fs) < 2 {
			continue
		}
		n, _ := strconv.Atoi(fs[1])
		m := &out[len(out)-1]
		switch fs[0] {
		case "Anonymous:":
			m.anon = n
		case "Private_Dirty:":
			m.dirty = n
		case "Rss:":
			m.rss = n
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// kind names what a mapping of an init holds, as far as its shape tells: the Go heap
// (its arenas are mapped between 4 GiB and the shared libraries' addresses), an async
// spawn's slot (the stack and control page above a one-page guard: see
// clone_async_linux.go), the waited spawns' stack (its C twin, without the control
// page), a thread's stack (8 MiB above a guard), an arena of C's malloc (64 MiB
// aligned, its unused rest reserved), the binary's data, a file, or other anonymous
// memory (mostly the Go runtime's metadata).
func kind(ms []mapping, i int) string {
	m := ms[i]
	size := m.end - m.start
	guarded := i > 0 && ms[i-1].end == m.start && ms[i-1].perms == "---p" && ms[i-1].end-ms[i-1].start == slotGuard
	reservedAfter := i+1 < len(ms) && ms[i+1].start == m.end && ms[i+1].perms == "---p"
	switch {
	case m.name != "" && strings.HasPrefix(m.name, "/"):
		return "file"
	case m.name != "":
		return m.name
	case guarded && size == slotStack+slotCtl+slotArgs:
		return "slot"
	case guarded && size == slotStack:
		return "vfork-stack"
	case guarded && size == 8<<20:
		return "thread-stack"
	case m.start%(64<<20) == 0 && reservedAfter && m.start >= 0x7f0000000000:
		return "malloc-arena"
	case m.start < 1<<32:
		return "bss"
	case m.start < 0x7f0000000000:
		return "heap"
	}
	return "anon"
}

// memByKind sums Anonymous and Private_Dirty per kind of mapping.
func memByKind(ms []mapping) map[string][2]int {
	out := map[string][2]int{}
	for i, m := range ms {
		k := kind(ms, i)
		v := out[k]
		v[0] += m.anon
		v[1] += m.dirty
		out[k] = v
	}
	return out
}

// TestMeasureBurstMemory reports what bursts of spawns leave in an init's private
// memory, per kind of mapping: fresh (one spawn, before any garbage collection),
// right after 2,000 NoWait spawns by four clients, once quiet, and once quiet after a
// second burst. Slow-ish and only run with NSINIT_MEASURE=1 (without -race, whose
// shadow memory would be most of it):
//
//	NSINIT_MEASURE=1 go test -count=1 -run TestMeasureBurstMemory -v ./runtime/internal/nsinit/
func TestMeasureBurstMemory(t *testing.T) {
	if os.Getenv("NSINIT_MEASURE") != "1" {
		t.Skip("set NSINIT_MEASURE=1 to measure")
	}
	in := startInit(t, Config{})
	b := newBurst(t, in)
	slots := in.SpawnPath() != SpawnFork && cloneBuilt
	b.spawn()
	type state struct {
		name    string
		byKind  map[string][2]int
		threads int
	}
	var states []state
	snap := func(name string) {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", in.PID()))
		states = append(states, state{name, memByKind(smaps(t, in.PID())), len(ents)})
	}
	snap("fresh")
	for i := range 2 {
		t0 := time.Now()
		b.run(4, 500)
		snap(fmt.Sprintf("after burst %d (%v)", i+1, time.Since(t0).Round(time.Millisecond)))
		quietKiB(t, in, slots, time.Now())
		snap(fmt.Sprintf("quiet after burst %d", i+1))
	}
	kinds := map[string]bool{}
	for _, st := range states {
		for k := range st.byKind {
			kinds[k] = true
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	fresh := 0
	for i, st := range states {
		var line strings.Builder
		total := 0
		for _, k := range names {
			if v := st.byKind[k][1]; v > 0 {
				fmt.Fprintf(&line, " %s %d", k, v)
				total += v
			}
		}
		if i == 0 {
			fresh = total
		}
		t.Logf("%-30s private dirty %5d KiB (%.2f× fresh), %d threads:%s", st.name, total,
			float64(total)/float64(fresh), st.threads, line.String())
	}
}

// burst spawns `true` through an init as the runtime's exec does (NoWait, a status
// pipe, /dev/null stdio), with arguments and an environment the size of a real
// exec's, so each spawn leaves the init as much garbage as one of the runtime's.
type burst struct {
	t    testing.TB
	in   *Init
	null *os.File
	env  []string
	// procs and dir, if set, are the cgroup the spawns start in, as the runtime's do
	// (SpawnRequest.Cgroup and CgroupDir), and wd their working directory.
	procs, dir *os.File
	wd         string
}

func newBurst(t testing.TB, in *Init) *burst {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = null.Close() })
	env := os.Environ()
	for len(env) < 40 {
		env = append(env, "PAD_"+string(rune('A'+len(env)%26))+"="+strings.Repeat("x", 64))
	}
	return &burst{t: t, in: in, null: null, env: env}
}

// spawn runs one `true` and waits for its status; failures are reported with Error.
func (b *burst) spawn() {
	r, w, err := os.Pipe()
	if err != nil {
		b.t.Error(err)
		return
	}
	defer r.Close()
	_, err = b.in.Spawn(testCtx(b.t), SpawnRequest{Argv: []string{"true", "a-long-enough-argument"}, Env: b.env, Dir: b.wd,
		Stdin: b.null, Stdout: b.null, Stderr: b.null, Status: w, NoWait: true, Cgroup: b.procs, CgroupDir: b.dir})
	_ = w.Close()
	if err != nil {
		b.t.Error(err)
		return
	}
	if st, ok, err := ReadStatus(int(r.Fd())); err != nil || !ok || st.Code != 0 {
		b.t.Error(st, ok, err)
	}
}

// run spawns n times from each of clients goroutines, and fails the test now if any
// spawn failed.
func (b *burst) run(clients, n int) {
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range n {
				b.spawn()
			}
		})
	}
	wg.Wait()
	if b.t.Failed() {
		b.t.FailNow()
	}
}
