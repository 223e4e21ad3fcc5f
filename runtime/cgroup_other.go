//go:build !linux

package runtime

import (
	"errors"
	"fmt"
	"os/exec"
)

// sandboxCgroup is a sandbox's cgroups; there are none on this system, so it is always
// nil and its methods do nothing.
type sandboxCgroup struct{}

// treeCgroup is a process tree's cgroup; always nil here.
type treeCgroup struct{}

var errNoCgroupsHere = errors.New("cgroups are Linux only")

func newSandboxCgroup(_, _ string, lim Limits) (*sandboxCgroup, error) {
	if lim.any() {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroups, errNoCgroupsHere)
	}
	return nil, nil
}

func (c *sandboxCgroup) setLimits(lim Limits) error {
	if lim.any() {
		return ErrNoCgroups
	}
	return nil
}

func (c *sandboxCgroup) enter(int) error               { return nil }
func (c *sandboxCgroup) usage() (Usage, error)         { return Usage{}, ErrNoCgroups }
func (c *sandboxCgroup) newTree() (*treeCgroup, error) { return nil, nil }
func (c *sandboxCgroup) destroy() error                { return nil }

func (t *treeCgroup) attach(*exec.Cmd) {}
func (t *treeCgroup) kill()            {}
func (t *treeCgroup) remove()          {}

// Containment says how this machine's sandboxes are contained: by process groups
// only, since cgroups are Linux only.
func Containment() (string, error) {
	return "process groups; no limits", fmt.Errorf("%w: %w", ErrNoCgroups, errNoCgroupsHere)
}

// Enforceable returns no limits: cgroups are Linux only.
func (l Limits) Enforceable() Limits { return Limits{} }

// Sweep ends what a previous run of the same node left in its cgroups; there are none
// on this system, so it returns nothing.
func Sweep(string) ([]string, error) { return nil, nil }

func (c *sandboxCgroup) startIn(_ *treeCgroup, _ *exec.Cmd, start func() error) error {
	return start()
}
