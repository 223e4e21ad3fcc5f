package nsinit

import (
	"runtime/debug"
	"time"
)

// trimAfter is how long an init goes without a spawn before it hands its unused heap
// back to the kernel.
const trimAfter = time.Second

// idleTrim returns the init's unused memory to the kernel once spawns have stopped
// for trimAfter. Each spawn's frame, argv and environment are garbage once the child
// runs, so a burst of spawns grows Go's heap to its minimum goal (4 MiB), which the
// runtime keeps mapped for minutes; without the trim an init that ran a few thousand
// execs held about 4 MiB more private memory than an idle one (BENCHMARKS.md, "#14,
// sixth pass: the spawner"). A busy init is not trimmed; an idle one holds what it
// uses. The timer is reset on each spawn and fires once per quiet spell, so an init
// that spawns nothing costs nothing.
type idleTrim struct{ t *time.Timer }

// newIdleTrim returns a trim that waits for its first spawn.
func newIdleTrim() *idleTrim {
	t := time.AfterFunc(time.Hour, debug.FreeOSMemory)
	t.Stop()
	return &idleTrim{t: t}
}

// spawned notes a spawn: the trim runs trimAfter after the last one.
func (tr *idleTrim) spawned() { tr.t.Reset(trimAfter) }
