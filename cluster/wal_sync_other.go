//go:build !linux

package cluster

import "os"

// datasync flushes f to stable storage; without fdatasync it is a full Sync.
func datasync(f *os.File) error { return f.Sync() }
