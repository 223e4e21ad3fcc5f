package gateway

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"

	"github.com/sandgate/sandgate/runtime"
)

// OpenCode's client names the project directory and workspace of every request: as
// the directory and workspace query parameters on GET and HEAD, and as the
// x-opencode-directory (URI-encoded) and x-opencode-workspace headers on the other
// methods (a per-call directory goes in the query whatever the method). Both are
// accepted everywhere, the query first.
const (
	directoryHeader = "X-Opencode-Directory"
	workspaceHeader = "X-Opencode-Workspace"
)

// openCodeDirectory returns the directory a request names, "" for none. A directory
// must be inside the sandbox's workspace (relative to it, or absolute as the sandbox's
// processes see it) and be a directory there; anything else is 400. The workspace id
// is accepted and has no meaning here: a sandbox is one workspace.
func (s *Server) openCodeDirectory(r *http.Request) (string, error) {
	q := r.URL.Query()
	dir := q.Get("directory")
	if dir == "" {
		if raw := r.Header.Get(directoryHeader); raw != "" {
			var err error
			if dir, err = url.PathUnescape(raw); err != nil {
				return "", badRequest("the %s header must be URI-encoded: %v", directoryHeader, err)
			}
		}
	}
	workspace := q.Get("workspace")
	if workspace == "" {
		workspace = r.Header.Get(workspaceHeader)
	}
	if err := noNULs("directory", dir, "workspace", workspace); err != nil {
		return "", err
	}
	if dir == "" {
		return "", nil
	}
	if err := s.checkDirectory(r.Context(), r.PathValue("sb"), dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkDirectory says, as a 400, why dir is not a directory inside the workspace of
// sandbox sb. Symlinks are followed within the workspace only.
func (s *Server) checkDirectory(ctx context.Context, sb, dir string) error {
	w, err := s.node.Workspace(ctx, sb)
	if err != nil {
		return err
	}
	defer w.Close()
	f, _, err := w.Open(dir)
	switch {
	case errors.Is(err, runtime.ErrIsDir):
		return nil // the answer sought
	case err == nil:
		f.Close()
		return badRequest("directory %q is a file, not a directory", dir)
	case errors.Is(err, runtime.ErrEscapes):
		return badRequest("directory %q is outside the sandbox's workspace", dir)
	case errors.Is(err, fs.ErrNotExist):
		return badRequest("directory %q does not exist in the sandbox's workspace", dir)
	case errors.Is(err, runtime.ErrInvalid):
		return badRequest("directory %q is not a directory", dir)
	}
	return err
}
