package runtime

import (
	"fmt"
)

// Bounds on an environment that is kept: a session's snapshot (its exported variables,
// saved after every command), and the env given to a sandbox, session, terminal or
// process. They follow what execve itself accepts on Linux, so an environment past
// them could not be handed to a program anyway: one "NAME=value" string is at most
// MAX_ARG_STRLEN (128 KiB), and argv and env together at most ARG_MAX (2 MiB with the
// usual 8 MiB stack), of which the environment gets half.
const (
	// MaxEnvVars is the most variables an environment may hold.
	MaxEnvVars = 1024
	// MaxEnvValueBytes bounds one variable, counted as execve counts one string
	// (MAX_ARG_STRLEN): NAME=value and its NUL. So the longest value is this less the
	// name's length and two.
	MaxEnvValueBytes = 128 << 10
	// MaxEnvBytes bounds an environment's size, counted as execve lays it out: the
	// sum of len(name)+len(value)+2 ("=" and the NUL) over its variables.
	MaxEnvBytes = 1 << 20
)

// EnvLimitError is an environment past one of the bounds above. It matches
// ErrEnvTooLarge with errors.Is.
type EnvLimitError struct {
	// Limit names the bound: "env_vars", "env_value_bytes" or "env_bytes".
	Limit string
	// Max is the bound's value, and Have what the environment has.
	Max, Have int64
	// Name is the variable whose value is too long, for "env_value_bytes".
	Name string
	// Listed says that Have is the size of bash's `export -p` listing of a session's
	// environment, which was too large to read (more than 4 × MaxEnvBytes, the most
	// an environment within the bounds takes), rather than of the environment.
	Listed bool
}

// Error says which bound was passed, e.g. "runtime: environment too large: 2000
// variables, over the limit of 1024 (env_vars)".
func (e *EnvLimitError) Error() string {
	switch e.Limit {
	case "env_vars":
		return fmt.Sprintf("%v: %d variables, over the limit of %d (%s)", ErrEnvTooLarge, e.Have, e.Max, e.Limit)
	case "env_value_bytes":
		return fmt.Sprintf("%v: variable %s is %d bytes as NAME=value and its NUL, over the limit of %d (%s)", ErrEnvTooLarge, e.Name, e.Have, e.Max, e.Limit)
	}
	if e.Listed {
		return fmt.Sprintf("%v: bash listed it in %d bytes, more than any environment within the limit of %d bytes (%s) takes",
			ErrEnvTooLarge, e.Have, e.Max, e.Limit)
	}
	return fmt.Sprintf("%v: %d bytes, over the limit of %d (%s)", ErrEnvTooLarge, e.Have, e.Max, e.Limit)
}

// Is reports whether target is ErrEnvTooLarge.
func (e *EnvLimitError) Is(target error) bool { return target == ErrEnvTooLarge }

// CheckEnv returns an *EnvLimitError when env is past MaxEnvVars, MaxEnvValueBytes or
// MaxEnvBytes, and nil otherwise. It does not check names (see the callers).
func CheckEnv(env map[string]string) error {
	if len(env) > MaxEnvVars {
		return &EnvLimitError{Limit: "env_vars", Max: MaxEnvVars, Have: int64(len(env))}
	}
	var total int64
	for k, v := range env {
		n := len(k) + len(v) + 2 // NAME=value\0
		if n > MaxEnvValueBytes {
			return &EnvLimitError{Limit: "env_value_bytes", Max: MaxEnvValueBytes, Have: int64(n), Name: k}
		}
		total += int64(n)
	}
	if total > MaxEnvBytes {
		return &EnvLimitError{Limit: "env_bytes", Max: MaxEnvBytes, Have: total}
	}
	return nil
}
