package nsinit

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmsg is recvmsg(2) on a blocking fd into p and oob, with a message header on
// the stack: x/sys's Recvmsg allocates the sender's address on every call, which a
// socketpair never has. It returns the bytes of p and of oob filled, and the
// message's flags (MSG_TRUNC, MSG_CTRUNC).
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn, recvflags int, err error) {
	var iov unix.Iovec
	iov.Base = unsafe.SliceData(p)
	iov.SetLen(len(p))
	var msg unix.Msghdr
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = unsafe.SliceData(oob)
		msg.SetControllen(len(oob))
	}
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return 0, 0, 0, e
	}
	return int(r), int(msg.Controllen), int(msg.Flags), nil
}

// parseControl returns the fds (SCM_RIGHTS, in order, from every such message) and
// the credentials (SCM_CREDENTIALS, the last) that a message's control data b
// carries, with one allocation for the fds and none for the walk, where x/sys's
// ParseSocketControlMessage and ParseUnixRights make three. Messages of another kind
// are skipped. A header that does not fit b is an error; the fds found before it are
// returned with it, for the caller to close.
func parseControl(b []byte) (fds []int, cred *unix.Ucred, err error) {
	hdr := cmsgAlign(unix.SizeofCmsghdr)
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(unsafe.SliceData(b)))
		if h.Len < uint64(hdr) || h.Len > uint64(len(b)) {
			return fds, cred, fmt.Errorf("%w: bad control message", ErrProtocol)
		}
		data := b[hdr:h.Len]
		if h.Level == unix.SOL_SOCKET {
			switch h.Type {
			case unix.SCM_RIGHTS:
				if fds == nil {
					fds = make([]int, 0, len(data)/4)
				}
				for ; len(data) >= 4; data = data[4:] {
					fds = append(fds, int(int32(binary.NativeEndian.Uint32(data))))
				}
			case unix.SCM_CREDENTIALS:
				if len(data) >= unix.SizeofUcred {
					cred = new(unix.Ucred)
					*cred = *(*unix.Ucred)(unsafe.Pointer(unsafe.SliceData(data)))
				}
			}
		}
		b = b[min(cmsgAlign(int(h.Len)), len(b)):]
	}
	return fds, cred, nil
}

// cmsgAlign rounds n up as CMSG_ALIGN does: to the size of a long.
func cmsgAlign(n int) int {
	const long = int(unsafe.Sizeof(uintptr(0)))
	return (n + long - 1) &^ (long - 1)
}
