//go:build !linux

package clustertest

import (
	"syscall"
	"time"
)

// procTree is empty where pidfds do not exist: only the process group is killed.
type procTree struct{}

func descendants(int) *procTree              { return &procTree{} }
func (t *procTree) kill()                    {}
func (t *procTree) wait(time.Duration) []int { return nil }
func (t *procTree) close()                   {}

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
