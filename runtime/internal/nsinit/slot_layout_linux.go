package nsinit

// The layout of an async spawn slot's mapping (clone_async_linux.go): a guard page,
// the child's stack, a control page holding the spawn's arguments (struct sg_spawn),
// which the child reads and writes its failure into, and the word the kernel clears
// when the child leaves the memory it shares with the init, and the spawn's strings,
// pointer arrays and fds, which the child reads. A spawn whose strings do not fit
// slotArgs is waited for instead. They are here, outside the cgo build, because the
// memory tests tell an init's mappings apart by these sizes on every build.
const (
	slotGuard = 4 << 10
	slotStack = 64 << 10
	slotCtl   = 4 << 10
	slotArgs  = 64 << 10
)
