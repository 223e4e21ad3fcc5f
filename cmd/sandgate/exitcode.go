package main

import (
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/sdk"
)

// linuxSignals names the signals by their Linux numbers: sandboxes run on Linux
// whatever the client's OS, and a shell reports a process killed by signal n as 128+n.
// An array laid out in the binary, not a map built at package initialisation.
var linuxSignals = [...]string{
	1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE",
	9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM",
	16: "STKFLT", 17: "CHLD", 18: "CONT", 19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU",
	23: "URG", 24: "XCPU", 25: "XFSZ", 26: "VTALRM", 27: "PROF", 28: "WINCH", 29: "IO",
	30: "PWR", 31: "SYS",
}

// linuxSignal returns the Linux number of the signal name (without SIG).
func linuxSignal(name string) (int, bool) {
	for n, s := range linuxSignals {
		if s != "" && s == name {
			return n, true
		}
	}
	return 0, false
}

// exitStatus is the exit code a shell would report for a process that exited with
// code or was killed by sig: 128+n for signal n, the code otherwise, and 255 for an
// exit the server could not describe.
func exitStatus(code *int, sig *sdk.Signal) int {
	if sig != nil && *sig != "" {
		name := strings.TrimPrefix(strings.ToUpper(string(*sig)), "SIG")
		if n, ok := linuxSignal(name); ok {
			return 128 + n
		}
		if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 128 {
			return 128 + n
		}
		return 255
	}
	if code != nil && *code >= 0 && *code <= 255 {
		return *code
	}
	return 255
}

// killedBy reports whether sig names the signal name (such as "SIGKILL").
func killedBy(sig *sdk.Signal, name string) bool {
	return sig != nil && strings.TrimPrefix(strings.ToUpper(string(*sig)), "SIG") == strings.TrimPrefix(name, "SIG")
}
