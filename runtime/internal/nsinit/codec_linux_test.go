package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unsafe"
)

// codecFrames are frames of every op, with every field set somewhere.
var codecFrames = []frame{
	{Op: opConfig, Config: &Config{ID: "sb", Workspace: "/w", Network: NetworkNone, UID: 1000, GID: 1000}, Home: true, FreezeFD: 5},
	{Op: opReady},
	{Op: opSpawn, ID: 1 << 40, Argv: []string{"sh", "-c", "echo ü\x00"}, Env: []string{"A=b", ""}, Dir: "/workspace/x",
		TTY: true, Session: true, Extra: 2, Cgroup: true, CgroupDir: true, Status: true, Lease: -1 << 62},
	{Op: opSpawn, ID: 2, Argv: []string{"true"}, Env: []string{}, NoWait: true},
	{Op: opStarted, ID: 3, PID: 1 << 30},
	{Op: opSignal, ID: 4, Target: 3, Sig: 9},
	{Op: opOK, ID: 4},
	{Op: opError, ID: 5, Err: "failed to start x: no such file", Errno: 2},
	{Op: opExit, ID: 3, Code: -1, Signal: 9},
	{Op: opExit, ID: 6, Code: 255},
	{Op: opLease, Lease: 1<<63 - 1},
}

// TestCodecRoundTrip: a decoded frame equals the one encoded, nil and empty Env
// kept apart (nil is the default environment); bad input is an ErrProtocol.
func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for _, want := range codecFrames {
		t.Run(want.Op, func(t *testing.T) {
			b, err := encodeFrame(nil, &want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("decoded %+v, want %+v", *got, want)
			}
			for n := range len(b) {
				if _, err := decodeFrame(b[:n]); !errors.Is(err, ErrProtocol) {
					t.Fatalf("a frame cut to %d of %d bytes: %v, want ErrProtocol", n, len(b), err)
				}
			}
			if _, err := decodeFrame(append(b, 0)); !errors.Is(err, ErrProtocol) {
				t.Fatalf("trailing byte: %v, want ErrProtocol", err)
			}
		})
	}
	if _, err := encodeFrame(nil, &frame{Op: "nope"}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("unknown op: %v, want ErrProtocol", err)
	}
	for _, b := range [][]byte{{byte(len(ops))}, {2, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		if _, err := decodeFrame(b); !errors.Is(err, ErrProtocol) {
			t.Fatalf("decode %x: %v, want ErrProtocol", b, err)
		}
	}
}

// BenchmarkCodec encodes and decodes an exec's frames (a spawn with a typical
// environment, its started and exit frames) with the codec and with encoding/json,
// which the protocol used before.
//
//	go test -run '^$' -bench BenchmarkCodec ./runtime/internal/nsinit/
func BenchmarkCodec(b *testing.B) {
	frames := []frame{
		{Op: opSpawn, ID: 12345, Argv: []string{"true"}, Dir: "/workspace", Cgroup: true,
			Env: []string{"PATH=" + DefaultPath, "HOME=/workspace", "LANG=C.UTF-8", "TERM=xterm", "USER=root"}},
		{Op: opStarted, ID: 12345, PID: 77},
		{Op: opExit, ID: 12345},
	}
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			for i := range frames {
				var err error
				if buf, err = encodeFrame(buf[:0], &frames[i]); err != nil {
					b.Fatal(err)
				}
				if _, err := decodeFrame(buf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			for i := range frames {
				buf, err := json.Marshal(&frames[i])
				if err != nil {
					b.Fatal(err)
				}
				var fr frame
				if err := json.Unmarshal(buf, &fr); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzDecodeFrame: any input decodes to a frame or an ErrProtocol, and a frame that
// decodes encodes back to what decodes to the same frame.
func FuzzDecodeFrame(f *testing.F) {
	for i := range codecFrames {
		b, err := encodeFrame(nil, &codecFrames[i])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("decode: %v, want ErrProtocol", err)
			}
			return
		}
		b, err := encodeFrame(nil, fr)
		if err != nil {
			t.Fatalf("encode of a decoded frame: %v", err)
		}
		again, err := decodeFrame(b)
		if err != nil || !reflect.DeepEqual(again, fr) {
			t.Fatalf("re-decoded %+v, %v; want %+v", again, err, fr)
		}
	})
}

// TestDecodeFrameInto: decoding into a reused frame gives what decodeFrame gives,
// clears what the frame held before, takes the given arrays for Argv and Env where
// they fit, and, with view, leaves the strings in the encoded bytes rather than
// copying them.
func TestDecodeFrameInto(t *testing.T) {
	t.Parallel()
	var fr frame
	argv, env := make([]string, 0, 8), make([]string, 0, 8)
	for _, view := range []bool{false, true} {
		for _, want := range codecFrames {
			t.Run(fmt.Sprintf("%s,view=%v", want.Op, view), func(t *testing.T) {
				b, err := encodeFrame(nil, &want)
				if err != nil {
					t.Fatal(err)
				}
				fr = frame{Op: opExit, ID: 99, Argv: []string{"stale"}, Env: []string{"STALE=1"}, Err: "stale", Dir: "/stale", hostPID: 5, pidFD: 6}
				if err := decodeFrameInto(&fr, b, view, argv, env); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(fr, want) {
					t.Fatalf("decoded %+v, want %+v", fr, want)
				}
				if len(fr.Argv) > 0 && unsafe.SliceData(fr.Argv) != unsafe.SliceData(argv) {
					t.Error("Argv not in the array given")
				}
				if len(fr.Env) > 0 && unsafe.SliceData(fr.Env) != unsafe.SliceData(env) {
					t.Error("Env not in the array given")
				}
				within := func(s string) bool {
					p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
					return p >= lo && p < lo+uintptr(len(b))
				}
				for _, s := range append(append([]string{fr.Err, fr.Dir}, fr.Argv...), fr.Env...) {
					if s != "" && within(s) != view {
						t.Errorf("string %q in the encoded bytes: %v, want %v", s, within(s), view)
					}
				}
			})
		}
	}
}
