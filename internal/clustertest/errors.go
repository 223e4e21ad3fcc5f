package clustertest

import "errors"

var (
	// ErrExited means a node's process ended before it was listening.
	ErrExited = errors.New("clustertest: serve exited before it was listening")
)
