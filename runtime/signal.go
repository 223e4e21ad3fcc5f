package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSignal is the highest signal number ParseSignal accepts (SIGRTMAX on Linux).
const maxSignal = 64

// ParseSignal parses a signal given by name or number: "SIGINT", "INT", "sigint",
// "int" and "2" all give syscall.SIGINT. Surrounding spaces are ignored. Anything else,
// including 0 and numbers above 64, is an error wrapping ErrBadSignal.
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadSignal)
	}
	if c := t[0]; c >= '0' && c <= '9' {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 || n > maxSignal {
			return 0, fmt.Errorf("%w: %q", ErrBadSignal, s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(t)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	// "SIG34": the form SignalName gives a signal without a name.
	if n, err := strconv.Atoi(name[3:]); err == nil && n >= 1 && n <= maxSignal && name[3] != '+' && name[3] != '-' {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadSignal, s)
}

// SignalName returns the conventional name of sig, such as "SIGINT". A signal without a
// name (a real-time signal) is "SIG" followed by its number.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}
