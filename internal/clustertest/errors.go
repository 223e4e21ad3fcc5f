package clustertest

import "errors"

var (
	// ErrJoinRefused means serve refused --join: this build cannot form a cluster.
	ErrJoinRefused = errors.New("clustertest: serve refuses --join in this build")
	// ErrExited means a node's process ended before it was listening.
	ErrExited = errors.New("clustertest: serve exited before it was listening")
)
