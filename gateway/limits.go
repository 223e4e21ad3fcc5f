package gateway

import (
	"net"
	"net/http"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// Bounds on the strings and maps a request hands the server to keep: a sandbox's
// labels, env and cwd, a session's or terminal's settings, a process's command, tag and
// label. Each is kept in a durable record, replicated, listed, and copied into events
// (process.created carries the command, sandbox.created the labels), so the 1 MiB body
// limit alone would let one record, and every event that repeats it, be a megabyte.
// docs/limits.md lists every bound of the server, these among them.
const (
	// maxLabels, maxLabelKeyBytes and maxLabelValueBytes bound a sandbox's labels:
	// at most 64 × 640 bytes, so a sandbox.created event stays within an event's
	// 64 KiB.
	maxLabels          = 64
	maxLabelKeyBytes   = 128
	maxLabelValueBytes = 512
	// maxPathBytes bounds a cwd or a shell path: PATH_MAX, past which the kernel
	// refuses the path anyway (ENAMETOOLONG).
	maxPathBytes = 4096
	// maxCommandBytes bounds a process's command, and its argv counted as execve
	// lays it out (each element and its NUL): one MAX_ARG_STRLEN, past which a
	// `sh -c` command cannot be started anyway.
	maxCommandBytes = 128 << 10
	// maxTagBytes bounds a process's tag and label, which are names, not data.
	maxTagBytes = 1024
)

// Defaults of Config.ExitedLimit, SessionLimit and TerminalLimit: the actor's.
const (
	DefaultExitedLimit   = actor.DefaultExitedLimit
	DefaultSessionLimit  = actor.DefaultSessionLimit
	DefaultTerminalLimit = actor.DefaultTerminalLimit
)

// tooLarge is the 413 of an item past one of the bounds, naming it.
func tooLarge(format string, args ...any) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, format, args...)
}

// checkPaths refuses a cwd or shell path (given as name, value pairs) longer than
// maxPathBytes: a bad path, 400.
func checkPaths(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if n := len(pairs[i+1]); n > maxPathBytes {
			return badRequest("%s is %d bytes, over the limit of %d", pairs[i], n, maxPathBytes)
		}
	}
	return nil
}

// checkLabels refuses labels past maxLabels, maxLabelKeyBytes or maxLabelValueBytes.
func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return tooLarge("%d labels, over the limit of %d", len(labels), maxLabels)
	}
	for k, v := range labels {
		if len(k) > maxLabelKeyBytes {
			return tooLarge("label key %.32q… is %d bytes, over the limit of %d", k, len(k), maxLabelKeyBytes)
		}
		if len(v) > maxLabelValueBytes {
			return tooLarge("label %q is %d bytes, over the limit of %d", k, len(v), maxLabelValueBytes)
		}
	}
	return nil
}

// maxAddrBytes bounds a member's raft_addr and http_addr: a DNS name (253 bytes) and
// a port, with room for IPv6 brackets.
const maxAddrBytes = 261

// checkMemberAddrs refuses a member address that is not host:port, or past
// maxAddrBytes: both are kept in the replicated member table and dialled.
func checkMemberAddrs(addrs ...string) error {
	for _, a := range addrs {
		if len(a) > maxAddrBytes {
			return badRequest("address %.32q… is %d bytes, over the limit of %d", a, len(a), maxAddrBytes)
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return badRequest("address %q is not host:port", a)
		}
	}
	return nil
}

// checkEnvSize refuses an env past runtime's bounds (runtime.CheckEnv), which are
// also the bounds of a session's saved snapshot.
func checkEnvSize(env map[string]string) error {
	if err := runtime.CheckEnv(env); err != nil {
		return tooLarge("env: %s", humanMessage(err))
	}
	return nil
}

// checkCommandSize refuses a process's command or argv over maxCommandBytes, and a tag
// or label over maxTagBytes.
func checkCommandSize(command string, argv []string, tag, label string) error {
	n := 0
	if command != "" {
		n = len(command) + 1 // the string and its NUL, as execve counts it
	}
	for _, a := range argv {
		n += len(a) + 1
	}
	if n > maxCommandBytes {
		return tooLarge("the command is %d bytes, over the limit of %d", n, maxCommandBytes)
	}
	if len(tag) > maxTagBytes {
		return tooLarge("tag is %d bytes, over the limit of %d", len(tag), maxTagBytes)
	}
	if len(label) > maxTagBytes {
		return tooLarge("label is %d bytes, over the limit of %d", len(label), maxTagBytes)
	}
	return nil
}
