package nsinit

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmsg is recvmsg(2) on a blocking fd into p and oob, with a message header on
// the stack: x/sys's Recvmsg allocates the sender's address on every call, which a
// socketpair never has. It returns the bytes of p and of oob filled, and the
// message's flags (MSG_TRUNC, MSG_CTRUNC).
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn, recvflags int, err error) {
	var iov unix.Iovec
	msg := msghdr(&iov, p, oob)
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return 0, 0, 0, e
	}
	return int(r), int(msg.Controllen), int(msg.Flags), nil
}

// msghdr returns the message header of one buffer p, described by iov (the caller's,
// which it fills), and control data oob, for recvmsg and sendmsg.
func msghdr(iov *unix.Iovec, p, oob []byte) unix.Msghdr {
	if len(p) > 0 {
		iov.Base = unsafe.SliceData(p)
		iov.SetLen(len(p))
	}
	var msg unix.Msghdr
	msg.Iov = iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = unsafe.SliceData(oob)
		msg.SetControllen(len(oob))
	}
	return msg
}

// parseControl returns the fds (SCM_RIGHTS, in order, from every such message),
// appended to fds, and the credentials (SCM_CREDENTIALS, the last) that a message's
// control data b carries, with at most one allocation for the fds (none if they fit
// fds) and none for the walk, where x/sys's ParseSocketControlMessage and
// ParseUnixRights make three. Messages of another kind are skipped. A header that
// does not fit b is an error; the fds found before it are returned with it, for the
// caller to close.
func parseControl(b []byte, fds []int) ([]int, *unix.Ucred, error) {
	var cred *unix.Ucred
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
				fds = slices.Grow(fds, len(data)/4)
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

// sendmsg is sendmsg(2) on a blocking fd of p with control data oob, with its
// message header on the stack, as recvmsg is.
func sendmsg(fd int, p, oob []byte, flags int) error {
	var iov unix.Iovec
	msg := msghdr(&iov, p, oob)
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return e
	}
	return nil
}

// appendRights appends an SCM_RIGHTS message carrying fds to b, as x/sys's
// UnixRights makes one; nothing if there are none.
func appendRights(b []byte, fds []int) []byte {
	if len(fds) == 0 {
		return b
	}
	b, data := appendCmsg(b, unix.SCM_RIGHTS, 4*len(fds))
	for i, fd := range fds {
		binary.NativeEndian.PutUint32(data[4*i:], uint32(int32(fd)))
	}
	return b
}

// appendCredentials appends an SCM_CREDENTIALS message carrying cred to b, as x/sys's
// UnixCredentials makes one.
func appendCredentials(b []byte, cred *unix.Ucred) []byte {
	b, data := appendCmsg(b, unix.SCM_CREDENTIALS, unix.SizeofUcred)
	*(*unix.Ucred)(unsafe.Pointer(unsafe.SliceData(data))) = *cred
	return b
}

// appendCmsg appends a zeroed control message of level SOL_SOCKET and type typ with
// room for n bytes of data to b, and returns b and the message's data.
func appendCmsg(b []byte, typ int32, n int) ([]byte, []byte) {
	at := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(n))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[at]))
	h.Level, h.Type = unix.SOL_SOCKET, typ
	h.SetLen(unix.CmsgLen(n))
	hdr := cmsgAlign(unix.SizeofCmsghdr)
	return b, b[at+hdr : at+hdr+n]
}

// cmsgAlign rounds n up as CMSG_ALIGN does: to the size of a long.
func cmsgAlign(n int) int {
	const long = int(unsafe.Sizeof(uintptr(0)))
	return (n + long - 1) &^ (long - 1)
}
