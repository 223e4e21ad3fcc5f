package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runtime/internal/frame"
)

func TestCheckEnv(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxEnvVars + 1 {
		many[fmt.Sprintf("V%d", i)] = "x"
	}
	atMost := map[string]string{}
	for i := range MaxEnvVars {
		atMost[fmt.Sprintf("V%d", i)] = "x"
	}
	big := map[string]string{}
	for i := range 9 { // 9 × 128 KiB > 1 MiB, each value within its own bound
		big[fmt.Sprintf("B%d", i)] = strings.Repeat("b", MaxEnvValueBytes-len(fmt.Sprintf("B%d", i))-2)
	}
	tests := []struct {
		name      string
		env       map[string]string
		wantLimit string // "" = within the bounds
	}{
		{name: "empty", env: nil},
		{name: "small", env: map[string]string{"A": "1", "PATH": "/bin"}},
		{name: "as many vars as allowed", env: atMost},
		{name: "one var too many", env: many, wantLimit: "env_vars"},
		{name: "longest value: A=value and its NUL make MAX_ARG_STRLEN", env: map[string]string{"A": strings.Repeat("a", MaxEnvValueBytes-3)}},
		{name: "value one byte too long", env: map[string]string{"A": strings.Repeat("a", MaxEnvValueBytes-2)}, wantLimit: "env_value_bytes"},
		{name: "total too large", env: big, wantLimit: "env_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckEnv(tt.env)
			if tt.wantLimit == "" {
				if err != nil {
					t.Fatalf("CheckEnv = %v, want nil", err)
				}
				return
			}
			var le *EnvLimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrEnvTooLarge) || le.Limit != tt.wantLimit {
				t.Fatalf("CheckEnv = %v, want an *EnvLimitError for %s", err, tt.wantLimit)
			}
			if !strings.Contains(err.Error(), tt.wantLimit) {
				t.Errorf("message %q does not name %s", err, tt.wantLimit)
			}
		})
	}
}

// TestSessionFramerBounded: a frame far past sessFrameCap, fed as the control pipe
// delivers it, is taken with its status and cwd while the framer never holds more
// than the cap and a chunk; the next frame is read as usual.
func TestSessionFramerBounded(t *testing.T) {
	t.Parallel()
	const nonce, chunk = "00112233445566778899aabbccddeeff", 32 << 10
	var f sessFramer
	feed := func(b []byte) (sessFrame, bool) {
		t.Helper()
		for len(b) > 0 {
			n := min(chunk, len(b))
			fr, done, err := f.take(b[:n], nonce)
			if err != nil {
				t.Fatalf("take: %v", err)
			}
			// append's growth may double a buffer's capacity past what it holds.
			if l, c := len(f.buf), cap(f.buf); l > sessFrameCap+chunk || c > 2*(sessFrameCap+chunk) {
				t.Fatalf("framer holds %d bytes (capacity %d), over the cap %d", l, c, sessFrameCap)
			}
			b = b[n:]
			if done {
				if len(b) > 0 {
					t.Fatalf("frame done with %d bytes left", len(b))
				}
				return fr, true
			}
		}
		return sessFrame{}, false
	}
	value := strings.Repeat("v", 20<<20)
	big := frame.Prefix + nonce + " 3\n/w/sub\n\x00declare -x BIG=\"" + value + "\"\n" + frame.Tail(nonce)
	fr, done := feed([]byte("junk" + big))
	if !done {
		t.Fatal("no frame")
	}
	var le *EnvLimitError
	if fr.Status != 3 || fr.Cwd != "/w/sub" || fr.Env != nil || !errors.As(fr.envErr, &le) || le.Limit != "env_bytes" || !le.Listed {
		t.Fatalf("frame = %d %q %v %v, want status 3 in /w/sub, no env, an env_bytes error", fr.Status, fr.Cwd, fr.Env, fr.envErr)
	}
	if cap(f.buf) > sessKeepCap {
		t.Errorf("framer kept %d bytes of capacity after the frame", cap(f.buf))
	}
	small := frame.Prefix + nonce + " 0\n/w\n\x00declare -x A=\"1\"\n" + frame.Tail(nonce)
	fr, done = feed([]byte(small))
	if !done || fr.envErr != nil || fr.Env["A"] != "1" || fr.Cwd != "/w" {
		t.Fatalf("next frame = %+v (done %v)", fr, done)
	}
}

// TestSessionSnapshotBounds: a command whose exported env is past a bound runs to its
// end and reports its output and status, but its cwd and env are not taken as the
// snapshot (the previous one stays) and the result says which bound; once the env is
// back within bounds the next command's snapshot is taken again.
func TestSessionSnapshotBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		export    string // bash that sets BIG* variables, builtins only once they are exported
		wantLimit string
	}{
		{name: "one value too long", export: `BIG=$(head -c 200000 /dev/zero | tr '\0' a); export BIG`, wantLimit: "env_value_bytes"},
		{name: "total too large", export: `v=$(head -c 120000 /dev/zero | tr '\0' a); for i in $(seq 10); do export BIG$i=$v; done`, wantLimit: "env_bytes"},
		{name: "too many variables", export: `for i in $(seq 1100); do export BIG$i=x; done`, wantLimit: "env_vars"},
		{name: "listing past the frame cap", export: `BIG=$(head -c 8000000 /dev/zero | tr '\0' a); export BIG`, wantLimit: "env_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := sessTestConfig(t)
			if err := os.Mkdir(filepath.Join(cfg.Dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := sessNewTest(t, cfg)
			sessRun(t, s, "export KEPT=1")
			before := s.Snapshot()

			r := sessRun(t, s, tt.export+"; cd sub; echo ran; (exit 3)")
			var le *EnvLimitError
			if !errors.As(r.SnapshotErr, &le) || le.Limit != tt.wantLimit {
				t.Fatalf("SnapshotErr = %v, want an *EnvLimitError for %s", r.SnapshotErr, tt.wantLimit)
			}
			if r.ExitCode != 3 || string(r.Stdout) != "ran\n" {
				t.Errorf("result = exit %d, stdout %q; want 3 and %q", r.ExitCode, r.Stdout, "ran\n")
			}
			after := s.Snapshot()
			if after.Cwd != before.Cwd || fmt.Sprint(after.Env) != fmt.Sprint(before.Env) {
				t.Errorf("snapshot changed past the bound: cwd %q → %q", before.Cwd, after.Cwd)
			}
			if in := s.Info(); in.Status != SessionReady || !strings.Contains(in.SnapshotError, tt.wantLimit) {
				t.Errorf("session %s with snapshot error %q after the command, want ready and one naming %s", in.Status, in.SnapshotError, tt.wantLimit)
			}

			r = sessRun(t, s, "unset ${!BIG*}; pwd")
			if r.SnapshotErr != nil {
				t.Fatalf("SnapshotErr = %v once the env is back within bounds", r.SnapshotErr)
			}
			if in := s.Info(); in.SnapshotError != "" {
				t.Errorf("snapshot error %q once the env is back within bounds", in.SnapshotError)
			}
			snap := s.Snapshot()
			if snap.Cwd != filepath.Join(cfg.Dir, "sub") || snap.Env["KEPT"] != "1" {
				t.Errorf("snapshot = cwd %q, KEPT %q; want %q and 1", snap.Cwd, snap.Env["KEPT"], filepath.Join(cfg.Dir, "sub"))
			}
		})
	}
}

// TestNewSessionEnvTooLarge: a session whose starting environment is already past the
// bounds is not started: it could keep no snapshot.
func TestNewSessionEnvTooLarge(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	cfg.Options.Env = map[string]string{}
	for i := range MaxEnvVars + 10 {
		cfg.Options.Env[fmt.Sprintf("V%d", i)] = "x"
	}
	s, err := newSession(sessTestCtx(t), cfg)
	if err == nil {
		_ = s.Close(sessTestCtx(t))
		t.Fatal("newSession started a session past the env bounds")
	}
	if !errors.Is(err, ErrEnvTooLarge) {
		t.Fatalf("newSession = %v, want ErrEnvTooLarge", err)
	}
}

// TestSessionFramerSplitTail: wherever the end marker of an oversized frame is split
// between reads, and whether the frame is still being gathered or already skipped
// when it ends, the frame is taken once, with its status and cwd, and what follows it
// is kept for the next frame.
func TestSessionFramerSplitTail(t *testing.T) {
	t.Parallel()
	const nonce = "00112233445566778899aabbccddeeff"
	tail := frame.Tail(nonce)
	next := frame.Prefix + nonce + " 0\n/n\n\x00" + tail
	for _, size := range []int{sessFrameCap - 1024, sessFrameCap + 1<<20} {
		whole := frame.Prefix + nonce + " 9\n/w\n\x00declare -x BIG=\"" + strings.Repeat("v", size) + "\"\n" + tail + next
		// k bytes go one read at a time: cuts inside the second frame, at its start,
		// inside the first frame's end marker and before it.
		for _, k := range []int{1, 2, len(next) - 1, len(next), len(next) + 1, len(next) + len(tail)/2,
			len(next) + len(tail) - 1, len(next) + len(tail), len(next) + len(tail) + 1} {
			var f sessFramer
			cut := len(whole) - k
			var got []sessFrame
			for i, part := range []string{whole[:cut], whole[cut:]} {
				for _, c := range []byte(part) {
					if i == 0 {
						break // the first part goes in one read
					}
					fr, done, err := f.take([]byte{c}, nonce)
					if err != nil {
						t.Fatalf("size %d, cut %d: %v", size, k, err)
					}
					if done {
						got = append(got, fr)
					}
				}
				if i == 0 {
					fr, done, err := f.take([]byte(part), nonce)
					if err != nil {
						t.Fatalf("size %d, cut %d: %v", size, k, err)
					}
					if done {
						got = append(got, fr)
					}
				}
			}
			// The second frame may be found only on a later read: what is left holds it.
			if len(got) == 1 {
				fr, done, err := f.take(nil, nonce)
				if err == nil && done {
					got = append(got, fr)
				}
			}
			if len(got) != 2 || got[0].Status != 9 || got[0].Cwd != "/w" || got[1].Cwd != "/n" {
				t.Fatalf("size %d, cut %d: frames %+v", size, k, got)
			}
			if over := size > MaxEnvValueBytes; over != (got[0].envErr != nil) {
				t.Fatalf("size %d: env error %v", size, got[0].envErr)
			}
		}
	}
}
