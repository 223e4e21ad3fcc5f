//go:build !linux

package runtime

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// The runtime needs Linux: waitid(WNOWAIT) to kill a tree before its leader is reaped,
// /proc to find a session's processes and inherited fds, eventfd and poll(2) for the
// output readers. Elsewhere the package builds, so that the gateway and its tools
// compile on a developer's machine, but New returns errUnsupported.

var errUnsupported = errors.New("runtime: processes are only supported on linux")

// platformErr is returned by New on this platform.
var platformErr = errUnsupported

func waitExited(int) error                      { return errUnsupported }
func awaitExited(int) error                     { return errUnsupported }
func killSession(int, syscall.Signal)           {}
func markCloexec()                              {}
func foregroundGroup(*os.File) int              { return 0 }
func eofChar(*os.File) byte                     { return 4 }
func setWinsize(*os.File, uint16, uint16) error { return errUnsupported }

func startPTY(*exec.Cmd, WinSize) (*os.File, error) { return nil, errUnsupported }

// KillAll does nothing here: the runtime starts no processes on this platform.
func KillAll() {}

type stopper struct{}

func newStopper() *stopper { return &stopper{} }
func (*stopper) stop()     {}
func (*stopper) close()    {}

func (*stopper) done() <-chan struct{} { return nil }

func (p *Process) readOutput(o output, _ *stopper) {
	buf := make([]byte, readBufBytes)
	for {
		n, err := o.f.Read(buf)
		if n > 0 {
			_ = p.ring.write(o.stream, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// tryWrite writes nothing here: the caller's blocking write does it all.
func tryWrite(*os.File, []byte) (int, error) { return 0, nil }
func exitNotifier(int) (int, error)          { return -1, errUnsupported }

func asOwner(_, _ int, fn func() error) error { return fn() }
