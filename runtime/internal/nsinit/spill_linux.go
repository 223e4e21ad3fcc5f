package nsinit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A request too large for one datagram (maxFrame: a spawn whose argv and env
// together pass 128 KiB, which the server's limits allow up to a 1 MiB environment
// and a 128 KiB command, as execve does) travels spilled: the sender writes its
// encoding to a sealed memory file and sends a spill frame with that file attached
// after the request's own fds. The init maps the file and decodes the request from
// the mapping, which it keeps until its next request, as it keeps its receive
// buffer (conn.recvReused), so a spilled request costs its Go heap nothing either.
// Only the init takes spilled frames: the server's end refuses them, so nothing the
// init sends can make the server map a file.

// maxSpill bounds a spilled request: a command's 128 KiB and a 1 MiB environment,
// encoded, with room to spare, far below what execve accepts with the sandbox's
// stack limit.
const maxSpill = 4 << 20

// spillSeals are the seals a spilled request's file carries: its content can no
// longer change, so the init's mapping of it can neither fault nor change while the
// init reads it.
const spillSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// spillFile writes an encoded frame to a new sealed memory file and returns its fd.
func spillFile(b []byte) (int, error) {
	if len(b) > maxSpill {
		return -1, ErrFrameTooLarge
	}
	fd, err := unix.MemfdCreate("nsinit-request", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	for off := 0; off < len(b); {
		n, err := unix.Write(fd, b[off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = unix.Close(fd)
			return -1, os.NewSyscallError("write", err)
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, spillSeals); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return fd, nil
}

// mapSpill maps a spilled request's file read-only, after checking that it is
// sealed and within maxSpill. It closes fd.
func mapSpill(fd int) ([]byte, error) {
	defer unix.Close(fd)
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&spillSeals != spillSeals {
		return nil, fmt.Errorf("%w: a spilled request's file is not sealed", ErrProtocol)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, os.NewSyscallError("fstat", err)
	}
	if st.Size <= 0 || st.Size > maxSpill {
		return nil, fmt.Errorf("%w: a spilled request of %d bytes", ErrProtocol, st.Size)
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return m, nil
}

// sendSpilled sends fr's encoding b, too large for a datagram, as a spill frame with
// its file after fds. The caller holds wmu.
func (c *conn) sendSpilled(fr *frame, b []byte, fds []int, cred *unix.Ucred) error {
	fd, err := spillFile(b)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	oob := appendRights(nil, append(fds[:len(fds):len(fds)], fd))
	if cred != nil {
		oob = appendCredentials(oob, cred)
	}
	marker, err := encodeFrame(nil, &frame{Op: opSpill, ID: fr.ID})
	if err != nil {
		return err
	}
	return c.sendEncoded(fr.Op, marker, oob)
}

// unspill decodes the request a spill frame fr carries in its last fd into fr, with
// its strings views of the file's mapping, kept in c until the next request. It
// returns the request's own fds.
func (c *conn) unspill(fds []int) ([]int, error) {
	if len(fds) == 0 {
		return nil, fmt.Errorf("%w: a spill frame without its file", ErrProtocol)
	}
	m, err := mapSpill(fds[len(fds)-1])
	fds = fds[:len(fds)-1]
	if err != nil {
		return fds, err
	}
	c.spill = m
	if err := decodeFrameInto(&c.rfr, m, true, c.rargv, c.renv); err != nil {
		return fds, err
	}
	if c.rfr.Op == opSpill {
		return fds, fmt.Errorf("%w: a spill frame inside a spilled request", ErrProtocol)
	}
	return fds, nil
}

// unmapSpill drops the mapping of the previous spilled request, if any.
func (c *conn) unmapSpill() {
	if c.spill != nil {
		_ = unix.Munmap(c.spill)
		c.spill = nil
	}
}
