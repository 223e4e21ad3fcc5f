package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// maxFileBody is the default limit for file uploads (16 MiB; docs/design.md, "Limits").
const maxFileBody = 16 << 20

type dirEntryJSON struct {
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModifiedAt time.Time `json:"modified_at"`
}

func filePath(r *http.Request, required bool) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" && required {
		return "", badRequest("path is required")
	}
	if p == "" {
		p = "."
	}
	return p, nil
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) error {
	path, err := filePath(r, false)
	if err != nil {
		return err
	}
	ws, err := s.openWorkspace(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	defer ws.Close()
	// Open follows links as a shell's cat does, so a link to a directory lists it.
	f, info, err := ws.Open(path)
	if errors.Is(err, runtime.ErrIsDir) {
		return s.listDir(w, r, ws, path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	h.Set("Last-Modified", info.ModTime().UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}

// Directory listings. A directory of up to dirSortLimit entries is listed sorted by
// name, as a shell's ls does; a larger one (a build cache, a million small files) is
// listed in the filesystem's order as it is read, dirBatch entries at a time, so the
// listing is never held whole: sorting would need every entry at once. Either way the
// answer is written item by item (list_stream.go).
const (
	dirSortLimit = 10000
	dirBatch     = 1024
)

// listDir answers the JSON listing of the directory at path.
func (s *Server) listDir(w http.ResponseWriter, r *http.Request, ws *runtime.Workspace, path string) error {
	d, err := ws.OpenDir(path)
	if err != nil {
		return err
	}
	defer d.Close()
	var held []runtime.DirEntry
	end := false
	for !end && len(held) <= dirSortLimit {
		batch, err := d.Next(dirBatch)
		if errors.Is(err, io.EOF) {
			end = true
		} else if err != nil {
			return err
		}
		held = append(held, batch...)
	}
	if end { // all of it, within dirSortLimit
		slices.SortFunc(held, func(a, b runtime.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	}
	l := newJSONList(w, "entries")
	for {
		for _, e := range held {
			if err := l.add(renderDirEntry(e)); err != nil {
				return s.listFailed(r, l, err)
			}
		}
		if end {
			break
		}
		batch, err := d.Next(dirBatch)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.listFailed(r, l, err)
		}
		held = batch
	}
	l.end()
	return nil
}

// renderDirEntry is a directory entry as the listing shows it.
func renderDirEntry(e runtime.DirEntry) dirEntryJSON {
	return dirEntryJSON{
		Name: e.Name, Type: e.Type, Size: e.Size,
		Mode: fmt.Sprintf("%04o", uint32(e.Mode.Perm())), ModifiedAt: e.ModTime.UTC(),
	}
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) error {
	path, err := filePath(r, true)
	if err != nil {
		return err
	}
	var mode *fs.FileMode // nil: the runtime keeps an existing file's mode, else 0644
	if raw := r.URL.Query().Get("mode"); raw != "" {
		m, err := strconv.ParseUint(raw, 8, 32)
		if err != nil || m > 0o7777 {
			return badRequest("mode must be octal permission bits like 0644, not %q", raw)
		}
		if m > 0o777 {
			return badRequest("mode %q is outside 0777: setuid, setgid and sticky bits cannot be set", raw)
		}
		perm := fs.FileMode(m)
		mode = &perm
	}
	if r.ContentLength > maxFileBody {
		return fileTooLarge()
	}
	ws, err := s.openWorkspace(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	defer ws.Close()
	body := http.MaxBytesReader(w, r.Body, maxFileBody)
	if err := ws.WriteFile(path, body, mode); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fileTooLarge()
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fileTooLarge is the error for a file body over maxFileBody.
func fileTooLarge() error {
	return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "file body over the limit of %d bytes (16 MiB)", maxFileBody)
}

// openWorkspace opens sandbox sb's workspace for a file route. The first time a
// workspace is opened after this server started, the temporary files that writes of an
// earlier process left behind (it was killed mid-PUT) are removed first. Doing it here
// rather than at start keeps start-up independent of the number of sandboxes and files:
// a workspace's one walk is paid by its first file request, and only if it gets one.
// Sandbox processes may see such a leftover until then.
func (s *Server) openWorkspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	ws, err := s.node.Workspace(ctx, sb)
	if err != nil {
		return nil, err
	}
	once, _ := s.tempSweeps.LoadOrStore(sb, new(sync.Once))
	once.(*sync.Once).Do(func() {
		n, err := ws.RemoveStaleTemps()
		if err != nil {
			s.log.Warn("failed to remove stale temporary files", "sandbox", sb, "err", err)
		}
		if n > 0 {
			s.log.Info("removed stale temporary files of interrupted writes", "sandbox", sb, "files", n)
		}
	})
	return ws, nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	path, err := filePath(r, true)
	if err != nil {
		return err
	}
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		return err
	}
	ws, err := s.openWorkspace(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := ws.Remove(path, recursive); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type mkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents"`
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request) error {
	var req mkdirRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return badRequest("path is required")
	}
	ws, err := s.openWorkspace(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := ws.Mkdir(req.Path, req.Parents); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func queryBool(r *http.Request, name string) (bool, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, badRequest("%s must be true or false, not %q", name, raw)
	}
	return v, nil
}
