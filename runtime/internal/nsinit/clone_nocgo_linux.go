//go:build linux && !(cgo && amd64)

package nsinit

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// cloneBuilt says this build has the init's own spawn path: not without cgo or on
// another architecture, where every spawn takes the fallback (ForkExec from the
// filtered thread, with the cgroup moves).
const cloneBuilt = false

// errNoClone is what the own spawn path returns in a build without it.
var errNoClone = errors.New("nsinit: no clone3 spawn path in this build")

func probeClone(int) (bool, error) { return false, errNoClone }

// waitedArgs has nothing to hold in a build without the own spawn path.
type waitedArgs struct{}

func cloneSpawn(*waitedArgs, string, []string, *syscall.ProcAttr, int, int, bool, *unix.SockFprog) (int, int, error) {
	return 0, -1, errNoClone
}

// asyncSlots has no slots in a build without the own spawn path.
type asyncSlots struct{}

func (*asyncSlots) start(string, []string, *syscall.ProcAttr, int, int, *unix.SockFprog, bool) (int, bool, error) {
	return 0, false, errNoClone
}

func (*asyncSlots) reaped(int) (pathKey, error) { return pathKey{}, nil }
