package main

import (
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/sdk"
)

// linuxSignals numbers the signals by their Linux numbers: sandboxes run on Linux
// whatever the client's OS, and a shell reports a process killed by signal n as 128+n.
var linuxSignals = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8,
	"KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
	"STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22,
	"URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29,
	"PWR": 30, "SYS": 31,
}

// exitStatus is the exit code a shell would report for a process that exited with
// code or was killed by sig: 128+n for signal n, the code otherwise, and 255 for an
// exit the server could not describe.
func exitStatus(code *int, sig *sdk.Signal) int {
	if sig != nil && *sig != "" {
		name := strings.TrimPrefix(strings.ToUpper(string(*sig)), "SIG")
		if n, ok := linuxSignals[name]; ok {
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
