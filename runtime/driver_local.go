package runtime

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LocalDriver runs processes directly on the host, in the workspace directory, as the
// gateway's user. It is the default Driver. Its zero value is ready to use.
type LocalDriver struct{}

var _ Driver = LocalDriver{}

// Command looks argv[0] up in the PATH of spec.Env and builds the command.
func (LocalDriver) Command(_ context.Context, spec Spec) (*exec.Cmd, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("%w: empty argv", ErrInvalid)
	}
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Dir)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: path, Args: spec.Argv, Dir: spec.Dir, Env: spec.Env}, nil
}

// lookPath resolves name like a shell does, using the PATH in env. A name with a slash
// is used as is: the kernel reports what is wrong with it at start.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := d + "/" + name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// executable reports whether p is a file (not a directory) we may execute.
func executable(p string) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	return unix.Access(p, unix.X_OK) == nil
}
