//go:build !linux

package runtime

import "syscall"

// sessWaitNoReap cannot wait without reaping here: it returns false at once, and the
// shell's leftover group is not killed when it exits on its own.
func sessWaitNoReap(int) bool { return false }

// sessKillTree kills the process group of leader; descendants that left the group are
// not found without /proc.
func sessKillTree(leader int) {
	_ = syscall.Kill(-leader, syscall.SIGKILL)
	_ = syscall.Kill(leader, syscall.SIGKILL)
}
