package runtime

import (
	"bytes"
	"errors"

	"github.com/sandgate/sandgate/runtime/internal/frame"
)

// sessFrameCap bounds the control bytes a session holds while one frame arrives. The
// frame's bulk is bash's `export -p`, which writes a byte of a value as at most four
// ($'\ooo'), so an environment within MaxEnvBytes always fits whole. Past the cap the
// listing is read and dropped up to the frame's end, keeping only its status and cwd:
// a command that exports gigabytes costs the server no more memory than this.
const sessFrameCap = 4*MaxEnvBytes + 64<<10

// sessKeepCap is the buffer capacity a session keeps between frames; a bigger one, left
// by a frame past the bounds, is let go. A session whose env is near MaxEnvBytes
// sends a frame of about that size after every command; keeping 2 MiB spares it a
// buffer regrown and dropped each time, and a session never keeps more.
const sessKeepCap = 2 << 20

// sessFramer gathers a session's control bytes into frames (see runtime/internal/frame).
// It is owned by whoever reads the control channel: newSession, then the worker.
type sessFramer struct {
	buf []byte
	// nonce and scanned: buf[:scanned] holds no start of nonce's end marker but
	// perhaps in its last bytes, so a read looks for one only in what is new, and a
	// frame gathered in many reads costs one pass over it.
	nonce   string
	scanned int
	// skipping is set once a frame outgrew sessFrameCap: its head was read (status,
	// cwd) and its listing is being dropped up to the frame's tail.
	skipping bool
	status   int
	cwd      string
	dropped  int64 // listing bytes dropped so far
}

// sessFrame is one command's frame as the session takes it.
type sessFrame struct {
	frame.Frame
	// envErr is an *EnvLimitError when the frame's environment is past the bounds
	// (Env is nil then): the session keeps its previous snapshot.
	envErr error
}

// take adds control bytes b and returns the frame of nonce once it is complete. Bytes
// before a frame header are dropped.
func (f *sessFramer) take(b []byte, nonce string) (sessFrame, bool, error) {
	if f.skipping {
		return f.skip(b, nonce)
	}
	if nonce != f.nonce {
		f.nonce, f.scanned = nonce, 0
	}
	f.buf = append(f.buf, b...)
	tail := frame.Tail(nonce)
	from := max(0, f.scanned-len(tail)+1)
	f.scanned = len(f.buf)
	err := frame.ErrIncomplete
	var fr frame.Frame
	var n int
	if bytes.Contains(f.buf[from:], []byte(tail)) {
		fr, n, err = frame.Parse(f.buf, nonce)
	}
	if err == nil {
		f.consumed(n)
		out := sessFrame{Frame: fr}
		if out.envErr = CheckEnv(fr.Env); out.envErr != nil {
			out.Env = nil
		}
		return out, true, nil
	}
	if !errors.Is(err, frame.ErrIncomplete) {
		return sessFrame{}, false, err
	}
	head := frame.Prefix + nonce + " "
	start := bytes.Index(f.buf, []byte(head))
	if start < 0 {
		// Junk with no header of ours in it (something wrote to the control pipe) is
		// dropped, but for a tail that may hold the start of the header.
		if len(f.buf) > 64<<10 {
			f.buf = append(f.buf[:0], f.buf[len(f.buf)-len(head):]...)
			f.scanned = 0
		}
		return sessFrame{}, false, nil
	}
	if len(f.buf)-start <= sessFrameCap {
		return sessFrame{}, false, nil
	}
	status, cwd, n, err := frame.ParseHead(f.buf[start:], nonce)
	if err != nil {
		// A head (status and pwd) never comes near the cap: this is no frame of ours.
		return sessFrame{}, false, errors.Join(frame.ErrMalformed, err)
	}
	f.skipping, f.status, f.cwd, f.dropped = true, status, cwd, 0
	f.buf, f.scanned = append(f.buf[:0], f.buf[start+n:]...), 0
	return f.skip(nil, nonce)
}

// skip drops the listing of an oversized frame up to its tail, holding no more than
// the tail's length of it.
func (f *sessFramer) skip(b []byte, nonce string) (sessFrame, bool, error) {
	tail := frame.Tail(nonce)
	f.buf = append(f.buf, b...)
	i := bytes.Index(f.buf, []byte(tail))
	if i < 0 {
		if keep := len(tail) - 1; len(f.buf) > keep {
			f.dropped += int64(len(f.buf) - keep)
			f.buf = append(f.buf[:0], f.buf[len(f.buf)-keep:]...)
		}
		return sessFrame{}, false, nil
	}
	f.dropped += int64(i)
	f.consumed(i + len(tail))
	f.skipping = false
	err := &EnvLimitError{Limit: "env_bytes", Max: MaxEnvBytes, Have: f.dropped, Listed: true}
	return sessFrame{Frame: frame.Frame{Status: f.status, Cwd: f.cwd}, envErr: err}, true, nil
}

// consumed drops the first n buffered bytes, letting a large buffer go.
func (f *sessFramer) consumed(n int) {
	f.scanned = 0 // what is left may hold the next frame whole
	rest := f.buf[n:]
	if cap(f.buf) > sessKeepCap {
		f.buf = append([]byte(nil), rest...)
		return
	}
	f.buf = append(f.buf[:0], rest...)
}
