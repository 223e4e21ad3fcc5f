package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// statusSize is the size of the record the init writes to a SpawnRequest.Status pipe:
// the exit code and the signal, each a little-endian int32.
const statusSize = 8

// encodeStatus is the record for an exit with code and signal sig.
func encodeStatus(code, sig int) [statusSize]byte {
	var b [statusSize]byte
	binary.LittleEndian.PutUint32(b[:], uint32(int32(code)))
	binary.LittleEndian.PutUint32(b[4:], uint32(int32(sig)))
	return b
}

// ReadStatus reads the status the init wrote to a SpawnRequest.Status pipe from its
// read end fd, once a poll found fd readable. ok is false if there is none to read: the
// pipe ended without one (the init went away first; Child.Wait then says why), or, on
// a non-blocking fd, none was written yet.
func ReadStatus(fd int) (st ExitStatus, ok bool, err error) {
	var b [statusSize]byte
	n, err := unix.Read(fd, b[:])
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Read(fd, b[:])
	}
	switch {
	case errors.Is(err, unix.EAGAIN):
		return ExitStatus{}, false, nil
	case err != nil:
		return ExitStatus{}, false, fmt.Errorf("failed to read the exit status: %w", err)
	case n != statusSize: // 0: closed without one; a short record never comes from the init
		return ExitStatus{}, false, nil
	}
	return ExitStatus{
		Code:   int(int32(binary.LittleEndian.Uint32(b[:]))),
		Signal: syscall.Signal(int32(binary.LittleEndian.Uint32(b[4:]))),
	}, true, nil
}
