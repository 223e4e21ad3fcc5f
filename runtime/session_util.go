package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// sessRandHex returns n random bytes in hex.
func sessRandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux; panics otherwise (crypto/rand contract)
	return hex.EncodeToString(b)
}

// sessShell resolves the session shell; only bash is supported. With lookup false the
// name is checked but not looked up: the driver finds it in the sandbox's own file
// system.
func sessShell(name string, lookup bool) (string, error) {
	if name == "" {
		name = "bash"
	}
	if filepath.Base(name) != "bash" {
		return "", fmt.Errorf("%w: shell %q: only bash is supported", ErrInvalid, name)
	}
	if !lookup {
		return name, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: shell %q: %w", ErrInvalid, name, err)
	}
	return p, nil
}

// sessResolveCwd resolves p against the workspace dir like a workspace path (see
// wsResolve): relative paths are joined to it and absolute ones must lie inside it,
// spelt with dir, with dir's symlinks resolved, or as the processes see it (guest). It
// is lexical: the shell itself may cd anywhere later.
func sessResolveCwd(dir, guest, p string) (string, error) {
	if p == "" {
		return dir, nil
	}
	prefixes := []string{dir}
	if guest != dir {
		prefixes = append(prefixes, guest)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		prefixes = append(prefixes, real)
	}
	rel, err := wsResolve(prefixes, p)
	if err != nil {
		return "", fmt.Errorf("cwd: %w", err)
	}
	return filepath.Join(dir, rel), nil
}

// snapshotDir returns the server path of cwd, the cwd of a session's snapshot, and
// whether it is still an existing directory. cwd is the shell's own: a path as the
// processes see it, which may lie outside the workspace (the shell may cd anywhere
// it can), or a server path of the workspace saved before the sandbox had a file
// system of its own. A path outside the workspace is looked up through the
// sandbox's root (host.root), so it is the sandbox's /tmp, not the server's.
func (s *Sandbox) snapshotDir(cwd string) (string, bool) {
	if !filepath.IsAbs(cwd) || strings.IndexByte(cwd, 0) >= 0 {
		return "", false
	}
	p := filepath.Clean(cwd)
	if !within(s.dir, p) {
		if r, err := sessResolveCwd(s.dir, s.guest, p); err == nil {
			p = r
		} else {
			p = s.h.root() + p
		}
	}
	fi, err := os.Stat(p)
	return p, err == nil && fi.IsDir()
}

// sessCheckDir returns ErrInvalid, naming the cwd as the caller spelt it, unless the
// resolved path p is an existing directory. A bad cwd is the caller's mistake, like
// a cwd outside the workspace, so it is not reported as a missing file.
func sessCheckDir(p, spelt string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: cwd %q does not exist", ErrInvalid, spelt)
	case err != nil:
		return fmt.Errorf("%w: cwd %q: %v", ErrInvalid, spelt, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Errorf("%w: cwd %q is not a directory", ErrInvalid, spelt)
	}
	return nil
}

// sessEnvList turns env into KEY=VALUE pairs, sorted, rejecting unusable keys.
func sessEnvList(env map[string]string) ([]string, error) {
	out := make([]string, 0, len(env))
	for _, k := range sessSortedKeys(env) {
		v := env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("%w: bad environment variable %q", ErrInvalid, k)
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

func sessSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sessMkdirTemp makes a session's private directory (mode 0700) under dir; with dir
// "" it prefers /dev/shm and falls back to os.TempDir().
func sessMkdirTemp(dir string) (string, error) {
	if dir == "" {
		if p, err := os.MkdirTemp("/dev/shm", "sandgate-sess-"); err == nil {
			return p, nil
		}
	}
	return os.MkdirTemp(dir, "sandgate-sess-")
}

// sessAsOwner runs fn, which makes files of the session's private directory, as the
// host user of the sandbox's processes when that is not the server's (a user
// namespace), so the shell can use them.
func sessAsOwner(sb *Sandbox, fn func() error) error {
	uid, gid := sb.h.owner()
	return asOwner(uid, gid, fn)
}

// sessWriteOwned writes a file of the session's private directory, for the shell.
func sessWriteOwned(sb *Sandbox, path string, b []byte) error {
	return sessAsOwner(sb, func() error { return os.WriteFile(path, b, 0o600) })
}
