//go:build !linux

package runtime

import "os"

// execOutput is where an exec's output goes; exec never runs on this platform (New
// fails), so it only has to compile.
type execOutput struct {
	stdout, stderr capBuffer
	outW, errW     *os.File
}

func (*execOutput) open(int) error                           { return errUnsupported }
func (*execOutput) started()                                 {}
func (*execOutput) close()                                   {}
func (*execOutput) collect(*execPolls, leader, func()) error { return errUnsupported }
