package runtime

// This file holds the two contract names that rt-sess uses but rt-proc owns
// (contracts/runtime-api.md): ExecResult (exec.go) and ErrInvalid (errors.go). They are
// copied verbatim from the contract so the rt-sess branch builds alone. DELETE THIS FILE
// when merging with rt-proc: its definitions take over.

import (
	"errors"
	"time"
)

// ErrInvalid is returned for bad options.
var ErrInvalid = errors.New("runtime: invalid argument")

// ExecResult is the outcome of one command.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Duration  time.Duration
	TimedOut  bool // exit code is then 124
	Truncated bool
}
