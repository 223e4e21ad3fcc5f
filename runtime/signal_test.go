package runtime

import (
	"errors"
	"syscall"
	"testing"
)

var signalTests = []struct {
	in   string
	want syscall.Signal
	err  bool
}{
	{in: "SIGINT", want: syscall.SIGINT},
	{in: "INT", want: syscall.SIGINT},
	{in: "int", want: syscall.SIGINT},
	{in: "sigint", want: syscall.SIGINT},
	{in: " SIGTERM ", want: syscall.SIGTERM},
	{in: "2", want: syscall.SIGINT},
	{in: "9", want: syscall.SIGKILL},
	{in: "64", want: 64},
	{in: "SIG34", want: 34},
	{in: "KILL", want: syscall.SIGKILL},
	{in: "winch", want: syscall.SIGWINCH},
	{in: "", err: true},
	{in: "0", err: true},
	{in: "65", err: true},
	{in: "-1", err: true},
	{in: "+2", err: true},
	{in: "2x", err: true},
	{in: "SIG", err: true},
	{in: "SIG0", err: true},
	{in: "SIG+2", err: true},
	{in: "NOPE", err: true},
	{in: "SIGSIGINT", err: true},
	{in: "99999999999999999999", err: true},
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for _, tt := range signalTests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSignal(tt.in)
			if tt.err {
				if !errors.Is(err, ErrBadSignal) {
					t.Errorf("ParseSignal(%q) = %v, %v; want ErrBadSignal", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseSignal(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSignalName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGINT, "SIGINT"},
		{syscall.SIGKILL, "SIGKILL"},
		{syscall.SIGWINCH, "SIGWINCH"},
		{40, "SIG40"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if got := SignalName(tt.sig); got != tt.want {
				t.Errorf("SignalName(%d) = %q, want %q", tt.sig, got, tt.want)
			}
		})
	}
}

// FuzzParseSignal: no input panics, errors wrap ErrBadSignal, and every accepted signal
// is in range and round-trips through SignalName.
func FuzzParseSignal(f *testing.F) {
	for _, tt := range signalTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignal(s)
		if err != nil {
			if !errors.Is(err, ErrBadSignal) {
				t.Fatalf("error %v does not wrap ErrBadSignal", err)
			}
			return
		}
		if sig < 1 || sig > maxSignal {
			t.Fatalf("ParseSignal(%q) = %d out of range", s, sig)
		}
		back, err := ParseSignal(SignalName(sig))
		if err != nil || back != sig {
			t.Fatalf("round trip of %d via %q = %d, %v", sig, SignalName(sig), back, err)
		}
	})
}

func TestIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := newProcessID()
		if len(id) != 21 || id[:5] != "proc_" || !ValidID(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		for _, c := range id[5:] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				t.Fatalf("non-hex id %q", id)
			}
		}
		seen[id] = true
	}
	tests := []struct {
		id string
		ok bool
	}{{"a", true}, {"t-1_x", true}, {"9", true}, {"", false}, {"-a", false}, {"_a", false}, {"A", false}, {"a b", false}, {string(make([]byte, 64)), false}}
	for _, tt := range tests {
		if ValidID(tt.id) != tt.ok {
			t.Errorf("ValidID(%q) = %v", tt.id, !tt.ok)
		}
	}
}
