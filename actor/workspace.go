package actor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandgate/sandgate/runtime"
)

// Workspace opens the sandbox's workspace for file access (the gateway's file routes).
// The caller owns the result and must Close it. It is safe for concurrent use, stays
// usable while the sandbox hibernates or passivates, and fails (fs.ErrNotExist) once the
// sandbox is deleted. It does not wake a hibernated sandbox, but counts as activity.
//
// The workspace is opened through an os.Root of the node's workspaces directory
// (runtime.OpenWorkspaceIn): a workspace directory that a process replaced with a
// symlink is refused with an error matching runtime.ErrInvalid, and nothing it points
// to is touched.
func (n *Node) Workspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	// The turn mounts the workspace's image if it has one, and says which filesystem
	// that is. Once the turn ends, hibernation or a deactivation may unmount it, and a
	// path opened after that would be the bare directory under the mount point: the
	// handle is checked, and the turn asked again. (A handle opened inside the turn
	// would leak when its caller gives up waiting for the answer.)
	var last error
	for range 3 {
		dev, err := call(ctx, n, sb, func(a *sbActor) (uint64, error) { return a.openWorkspace() })
		if err != nil {
			return nil, err
		}
		w, err := runtime.OpenWorkspaceIn(n.workspacesDir(), sb)
		switch {
		case err == nil && (dev == 0 || workspaceDev(w) == dev):
			w.SeenAt(runtime.GuestDir(n.cfg.Driver, w.Dir())) // the processes' spelling: exec of pwd
			return w, nil
		case err == nil:
			_ = w.Close() // unmounted since the turn
			last = fmt.Errorf("%w: the workspace of sandbox %q was unmounted while being opened; retry", ErrUnavailable, sb)
		case dev == 0:
			return nil, fmt.Errorf("actor: %w", err) // runtime's error says "failed to open workspace"
		default:
			// A mounted image cannot be renamed or replaced (EBUSY), so this is an
			// unmount between the runtime's checks ("replaced while being opened").
			last = fmt.Errorf("actor: %w", err)
		}
	}
	return nil, last
}

// openWorkspace is the turn of Workspace: it makes sure the workspace exists and is
// mounted, and returns the device of its image's filesystem (0 without an image).
func (a *sbActor) openWorkspace() (uint64, error) {
	if err := a.exists(); err != nil {
		return 0, err
	}
	a.touch()
	a.markFiles()
	if err := a.mountDisk(); err != nil {
		return 0, err
	}
	// Recreate it if it went missing (a process removed it): the API promises a
	// workspace for every sandbox. Mkdir does not follow a symlink in its place.
	if err := os.MkdirAll(a.n.workspacesDir(), 0o755); err != nil {
		return 0, fmt.Errorf("actor: failed to create workspace: %w", err)
	}
	if err := os.Mkdir(a.n.workspaceDir(a.id), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("actor: failed to create workspace: %w", err)
	}
	if a.sb.mount == nil {
		return 0, nil
	}
	fi, err := os.Lstat(a.sb.mount.Dir)
	if err != nil {
		return 0, fmt.Errorf("%w: failed to open workspace of %q: %w", ErrUnavailable, a.id, err)
	}
	return fileDev(fi), nil
}

// workspaceDev is the device of the filesystem w's root is on; 0 if unknown.
func workspaceDev(w *runtime.Workspace) uint64 {
	fi, err := w.Stat(".")
	if err != nil {
		return 0
	}
	return fileDev(fi)
}

func fileDev(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// workspacesDir is the directory holding every sandbox's workspace directory.
func (n *Node) workspacesDir() string { return filepath.Join(n.cfg.DataDir, "workspaces") }
