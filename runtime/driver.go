package runtime

import (
	"context"
	"os/exec"
)

// Spec describes one process for a Driver to build.
type Spec struct {
	// Argv is the program and its arguments. A program without a slash is looked up in
	// the PATH of Env.
	Argv []string
	// Dir is the absolute working directory, inside the workspace.
	Dir string
	// Env is the complete environment, KEY=value.
	Env []string
	// PTY says the runtime will put the process on a PTY in a new session.
	PTY bool
}

// Driver decides how a sandbox's processes are built: on the host (the local driver),
// or later inside namespaces and cgroups. It only builds the command; the runtime then
// wires stdio (pipes or a PTY), sets the process group or session, starts it, and owns
// waiting and killing, so every driver gets the same lifecycle.
//
// A Driver must be safe for concurrent use.
//
// EXPERIMENTAL: a namespace driver will need the interface as it is; anything beyond
// (per-sandbox setup and teardown) will be an optional interface detected by assertion.
type Driver interface {
	// Command returns an unstarted command for spec with Path, Args, Dir and Env set,
	// and SysProcAttr when the driver needs one (namespaces, cgroup). The runtime keeps
	// the driver's SysProcAttr and adds Setpgid, or Setsid and Setctty for a PTY.
	// A program that cannot be found is an error wrapping exec.ErrNotFound.
	Command(ctx context.Context, spec Spec) (*exec.Cmd, error)
}
