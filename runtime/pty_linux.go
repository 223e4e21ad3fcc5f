package runtime

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// startPTY starts cmd on a new PTY of the given size, as a session leader with the PTY
// as its controlling terminal, and returns the master. The master is O_CLOEXEC (so no
// other child inherits it) and in non-blocking mode on Go's poller, so reads honour
// deadlines and Close. The slave is closed in our process once the child has it.
func startPTY(cmd *exec.Cmd, size WinSize) (*os.File, error) {
	attrs := cmd.SysProcAttr
	if attrs == nil {
		attrs = &syscall.SysProcAttr{}
	}
	attrs.Setsid, attrs.Setctty, attrs.Setpgid, attrs.Ctty = true, true, false, 0
	m, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: size.Cols, Rows: size.Rows}, attrs)
	if err != nil {
		return nil, err
	}
	pm, err := pollable(m)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return pm, nil
}

// pollable returns a non-blocking, poller-managed copy of f and closes f. creack/pty's
// ioctls call f.Fd(), which leaves the file in blocking mode: reads would then pin a
// thread each and ignore deadlines.
func pollable(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var dupErr error
	if err := sc.Control(func(fd uintptr) {
		nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	_ = f.Close()
	if dupErr != nil {
		return nil, dupErr
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		_ = unix.Close(nfd)
		return nil, err
	}
	return os.NewFile(uintptr(nfd), "/dev/ptmx"), nil
}

// setWinsize sets the window size of the PTY master m. It is pty.Setsize without
// f.Fd(), which would switch m back to blocking mode.
func setWinsize(m *os.File, cols, rows uint16) error {
	return control(m, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
}

// eofChar returns the terminal's VEOF character (normally ^D), which written to the
// master m ends the input of a reader at the start of a line.
func eofChar(m *os.File) byte {
	eof := byte(4)
	_ = control(m, func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err == nil && t.Cc[unix.VEOF] != 0 {
			eof = t.Cc[unix.VEOF]
		}
		return err
	})
	return eof
}

func control(f *os.File, fn func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// foregroundGroup returns the foreground process group of the terminal whose master is
// m (TIOCGPGRP on a master reports the slave's), or 0.
func foregroundGroup(m *os.File) int {
	pg := 0
	_ = control(m, func(fd int) error {
		v, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		if err == nil {
			pg = v
		}
		return err
	})
	return pg
}
