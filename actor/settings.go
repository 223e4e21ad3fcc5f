package actor

import (
	"maps"
	"os/exec"
	"path/filepath"
	"time"
)

// Get-or-create (sandboxes, sessions) compares effective settings, not the literal
// request: a repeated create that spells the same settings differently ("" and "." for
// a cwd, no shell and "bash", no env and {}) gets the existing one, not a conflict.

// sameSettings reports whether a create request matches an existing sandbox: the same
// labels, env, tenant and pool (nil and empty maps alike) and the same cwd once cleaned
// (see cleanCwd; ws is the sandbox's workspace directory).
func (r *sandboxRec) sameSettings(ws string, s SandboxSpec) bool {
	return maps.Equal(r.Labels, s.Labels) && maps.Equal(r.Env, s.Env) && cleanCwd(ws, r.Cwd) == cleanCwd(ws, s.Cwd) &&
		r.Tenant == s.Tenant && maps.Equal(r.Pool, s.Pool)
}

// sameSession reports whether a session create request s matches the live session st
// as it would run: cwd "" is the sandbox's cwd, env is overlaid on the sandbox's env,
// shell "" is bash, and the timeout is clamped to the budget as a command's is.
func (a *sbActor) sameSession(st *sessionState, s SessionSpec) bool {
	ws := a.n.workspaceDir(a.id)
	return cleanCwd(ws, a.defaultCwd(st.rec.Cwd)) == cleanCwd(ws, a.defaultCwd(s.Cwd)) &&
		maps.Equal(overlayEnv(a.rec.Env, st.rec.Env), overlayEnv(a.rec.Env, s.Env)) &&
		sameShell(st.rec.Shell, s.Shell) &&
		a.clampTimeout(msDuration(st.rec.TimeoutMs)) == a.clampTimeout(msDuration(s.Timeout.Milliseconds()))
}

// cleanCwd is cwd as the workspace resolves it, relative to the workspace directory ws:
// "", "." and "./" are ".", "a/b/" is "a/b", and an absolute path inside ws is made
// relative. Anything else (an absolute path outside) is only cleaned; creating with it
// fails anyway.
func cleanCwd(ws, cwd string) string {
	if filepath.IsAbs(cwd) {
		if rel, err := filepath.Rel(ws, filepath.Clean(cwd)); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return rel
		}
	}
	return filepath.Clean(cwd) // "" is "."
}

// overlayEnv is over overlaid on base, as a process sees them (either may be nil).
func overlayEnv(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	if len(base) == 0 {
		return over
	}
	env := maps.Clone(base)
	maps.Copy(env, over)
	return env
}

// msDuration is ms milliseconds (a record's timeout_ms; the session record keeps ms).
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// sameShell reports whether two session shells are the same: "" is "bash", and two
// names that resolve to the same program on PATH are one shell.
func sameShell(x, y string) bool {
	if x == "" {
		x = "bash"
	}
	if y == "" {
		y = "bash"
	}
	if x == y {
		return true
	}
	px, errx := exec.LookPath(x)
	py, erry := exec.LookPath(y)
	return errx == nil && erry == nil && px == py
}
