package nsinit

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseControl checks parseControl against x/sys's parsers on the control data
// the protocol sends, and that it refuses a header that does not fit.
func TestParseControl(t *testing.T) {
	cred := &unix.Ucred{Pid: 42, Uid: 1000, Gid: 1001}
	tests := []struct {
		name     string
		oob      []byte
		wantFDs  []int
		wantCred *unix.Ucred
		wantErr  bool
	}{
		{"none", nil, nil, nil, false},
		{"rights", unix.UnixRights(3, 4, 9), []int{3, 4, 9}, nil, false},
		{"one fd", unix.UnixRights(7), []int{7}, nil, false},
		{"rights and credentials", append(unix.UnixRights(5, 6), unix.UnixCredentials(cred)...), []int{5, 6}, cred, false},
		{"credentials and rights", append(unix.UnixCredentials(cred), unix.UnixRights(5, 6)...), []int{5, 6}, cred, false},
		{"two rights messages", append(unix.UnixRights(1, 2), unix.UnixRights(3)...), []int{1, 2, 3}, nil, false},
		{"a header longer than the data", unix.UnixRights(3, 4)[:unix.CmsgLen(4)], nil, nil, true},
		{"rights, then a bad header", append(unix.UnixRights(8), 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0), []int{8}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fds, got, err := parseControl(tt.oob, nil)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("err %v, want an error: %v", err, tt.wantErr)
			}
			if !slices.Equal(fds, tt.wantFDs) {
				t.Fatalf("fds %v, want %v", fds, tt.wantFDs)
			}
			if (got == nil) != (tt.wantCred == nil) || (got != nil && *got != *tt.wantCred) {
				t.Fatalf("credentials %+v, want %+v", got, tt.wantCred)
			}
			if tt.wantErr {
				return
			}
			// x/sys agrees.
			msgs, err := unix.ParseSocketControlMessage(tt.oob)
			if err != nil {
				t.Fatal(err)
			}
			var xfds []int
			for i := range msgs {
				if r, err := unix.ParseUnixRights(&msgs[i]); err == nil {
					xfds = append(xfds, r...)
				}
			}
			if !slices.Equal(fds, xfds) {
				t.Fatalf("fds %v, x/sys %v", fds, xfds)
			}
		})
	}
}

// TestCloseFDs checks that closeFDs closes exactly the fds it is given, consecutive
// (one close_range) or not, and leaves their neighbours open.
func TestCloseFDs(t *testing.T) {
	tests := []struct {
		name  string
		close func(fds []int) []int // which of 6 consecutive fds to close
	}{
		{"a run", func(fds []int) []int { return fds[1:5] }},
		{"one", func(fds []int) []int { return fds[2:3] }},
		{"out of order", func(fds []int) []int { return []int{fds[3], fds[2], fds[1]} }},
		{"with a gap", func(fds []int) []int { return []int{fds[1], fds[2], fds[4]} }},
		{"none", func(fds []int) []int { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fds := consecutiveFDs(t, 6)
			closed := tt.close(fds)
			closeFDs(closed)
			for _, fd := range fds {
				_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				if open := err == nil; open == slices.Contains(closed, fd) {
					t.Errorf("fd %d open %v after closing %v of %v", fd, open, closed, fds)
				}
				if err == nil {
					_ = unix.Close(fd)
				}
			}
		})
	}
}

// consecutiveFDs opens n fds with consecutive numbers (dups of a pipe's end, above
// the test process's other fds), or skips.
func consecutiveFDs(t *testing.T, n int) []int {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	base, err := unix.FcntlInt(uintptr(p[0]), unix.F_DUPFD_CLOEXEC, 900)
	if err != nil {
		t.Fatal(err)
	}
	fds := []int{base}
	for len(fds) < n {
		fd, err := unix.FcntlInt(uintptr(p[0]), unix.F_DUPFD_CLOEXEC, base+len(fds))
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	if !consecutive(fds) {
		closeFDs(fds)
		t.Skipf("fds %v are not consecutive", fds)
	}
	return fds
}

// TestAppendControl: the control data send builds in its own buffer is x/sys's,
// byte for byte, appended after what the buffer held.
func TestAppendControl(t *testing.T) {
	t.Parallel()
	cred := &unix.Ucred{Pid: 42, Uid: 1000, Gid: 1001}
	tests := []struct {
		name string
		fds  []int
		cred *unix.Ucred
		want []byte
	}{
		{"none", nil, nil, nil},
		{"one fd", []int{7}, nil, unix.UnixRights(7)},
		{"three fds", []int{3, 4, 9}, nil, unix.UnixRights(3, 4, 9)},
		{"credentials", nil, cred, unix.UnixCredentials(cred)},
		{"fd and credentials", []int{5}, cred, append(unix.UnixRights(5), unix.UnixCredentials(cred)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 0, 64)
			buf = append(buf, make([]byte, 16)...) // what a reused buffer held before: cut off by the caller
			got := appendRights(buf[:0], tt.fds)
			if tt.cred != nil {
				got = appendCredentials(got, tt.cred)
			}
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("control data %x, want %x", got, tt.want)
			}
		})
	}
}
