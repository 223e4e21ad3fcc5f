package actor

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Usage is what an active sandbox uses now: the sandbox object's "usage". Memory and
// pids come from an isolating runtime driver (its cgroup); a runtime that cannot tell
// (the local driver) reports 0 for both.
type Usage struct {
	MemoryBytes int64 // memory charged to the sandbox's processes
	Pids        int   // tasks (processes and threads) running in it
	DiskBytes   int64 // bytes allocated to the workspace's files
}

// Bounds of the disk usage walk. The walk runs on the actor goroutine, so it is cached
// and bounded: a workspace of more entries shows the allocation of the first
// diskWalkLimit (a lower bound) until the workspace is a filesystem of its own, whose
// usage statfs gives at once. BenchmarkUsage measured 2-3.5 ms per 1,000 entries on
// our 2-core VM, so a walk holds the actor for at most ~35 ms, once per diskUsageMaxAge
// of activity.
const (
	diskUsageMaxAge = 10 * time.Second
	diskWalkLimit   = 10000
)

// cgroupUsageMaxAge bounds the age of the memory and pids figures a group publishes
// for Stats and the list (publishInfo). A busy sandbox publishes after nearly every
// group (each exec touches it twice), and reading the cgroup's files each time cost
// about 65 µs of CPU per exec, 15% of the server's share under 8 concurrent exec
// clients (BENCHMARKS.md, "#14, third pass"). A caller asking for the sandbox itself
// (GetSandbox and the like) reads them afresh.
const cgroupUsageMaxAge = time.Second

// cgroupMeter caches the runtime's last memory and pids figures. Only the actor
// goroutine touches it.
type cgroupMeter struct {
	rt          *runtime.Sandbox // whose figures these are; nil: none read
	memoryBytes int64
	pids        int
	at          time.Time
}

// diskMeter caches a workspace's disk usage. Only the actor goroutine touches it.
type diskMeter struct {
	bytes int64
	at    time.Time // when bytes was measured; zero: never
}

// usageNow returns the sandbox's usage; a.rec is not nil. With fresh false the memory
// and pids figures may be up to cgroupUsageMaxAge old. A figure that changed since the
// last published info marks the group dirty, so Stats sees it after this turn.
func (a *sbActor) usageNow(fresh bool) *Usage {
	u := &Usage{}
	now := a.now()
	if rt := a.sb.rt; rt != nil {
		c := &a.sb.cgroup
		if fresh || c.rt != rt || now.Sub(c.at) >= cgroupUsageMaxAge || now.Before(c.at) {
			src := a.n.cfg.runtimeUsage
			if src == nil {
				src = runtimeUsage
			}
			c.memoryBytes, c.pids = src(rt)
			c.rt, c.at = rt, now
		}
		u.MemoryBytes, u.Pids = c.memoryBytes, c.pids
	}
	m := &a.sb.disk
	switch {
	case a.measureDisk():
		// A mounted image: its statfs is exact and cheap (disk.go).
	case a.sb.hasImage:
		// An image not mounted now (hibernated) cannot change: its last figure stands,
		// and a walk would only see the empty directory it mounts on.
	case m.at.IsZero() || now.Sub(m.at) >= diskUsageMaxAge || now.Before(m.at):
		m.bytes, m.at = diskUsage(a.n.workspaceDir(a.id), diskWalkLimit), now
	}
	u.DiskBytes = m.bytes
	if prev := a.info.Load(); prev == nil || prev.Usage == nil || *prev.Usage != *u {
		a.dirty = true // publish it, for Stats (metrics)
	}
	return u
}

// diskUsage sums the allocated bytes of the files under dir (not following symlinks),
// visiting at most limit entries. Entries that vanish or cannot be read are skipped. A
// file with several names (hard links) is counted once, as du counts it and as the
// disk holds it.
func diskUsage(dir string, limit int) int64 {
	type inode struct{ dev, ino uint64 }
	var total int64
	var linked map[inode]bool // files of more than one name counted so far
	seen := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a vanished or unreadable entry: skip it
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 && !fi.IsDir() {
				key := inode{uint64(st.Dev), uint64(st.Ino)}
				if linked[key] {
					return nil
				}
				if linked == nil {
					linked = map[inode]bool{}
				}
				linked[key] = true
			}
			total += int64(st.Blocks) * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	return total
}

// runtimeUsage asks rt for its cgroup's usage when it can tell; 0, 0 otherwise.
func runtimeUsage(rt *runtime.Sandbox) (memoryBytes int64, pids int) {
	u, err := rt.Usage()
	if err != nil { // no cgroups: nothing to report
		return 0, 0
	}
	return max(u.MemoryBytes, 0), u.Pids
}
