package gateway

import (
	"errors"
	"net/http"

	"github.com/sandgate/sandgate/actor"
)

type putTerminalRequest struct {
	Cols  uint16            `json:"cols"`
	Rows  uint16            `json:"rows"`
	Cwd   string            `json:"cwd"`
	Env   map[string]string `json:"env"`
	Shell string            `json:"shell"`
}

func (s *Server) putTerminal(w http.ResponseWriter, r *http.Request) error {
	var req putTerminalRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	size, err := winSize(req.Cols, req.Rows, true)
	if err != nil {
		return err
	}
	if err := noNULs("cwd", req.Cwd, "shell", req.Shell); err != nil {
		return err
	}
	if err := checkPaths("cwd", req.Cwd, "shell", req.Shell); err != nil {
		return err
	}
	if err := validateEnv(req.Env); err != nil {
		return err
	}
	info, created, err := s.node.PutTerminal(r.Context(), r.PathValue("sb"), r.PathValue("t"), actor.TerminalSpec{
		Cols: size.Cols, Rows: size.Rows, Cwd: req.Cwd, Env: req.Env, Shell: req.Shell,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, renderTerminal(info))
	return nil
}

func (s *Server) listTerminals(w http.ResponseWriter, r *http.Request) error {
	list, err := s.node.ListTerminals(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	l := newJSONList(w, "terminals") // encoded item by item (list_stream.go)
	for _, i := range list {
		if err := l.add(renderTerminal(i)); err != nil {
			return s.listFailed(r, l, err)
		}
	}
	l.end()
	return nil
}

func (s *Server) getTerminal(w http.ResponseWriter, r *http.Request) error {
	sb, id := r.PathValue("sb"), r.PathValue("t")
	info, _, err := s.node.GetTerminal(r.Context(), sb, id)
	if errors.Is(err, actor.ErrExpired) {
		// A GET is a read: an expired sandbox accepts no new work, so its stopped
		// terminal gets no new shell, but the terminal is shown as it is, as in the list.
		info, err = s.terminalRecord(r, sb, id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderTerminal(info))
	return nil
}

// terminalRecord returns terminal id of sandbox sb as it is, without starting its shell.
func (s *Server) terminalRecord(r *http.Request, sb, id string) (actor.TerminalInfo, error) {
	list, err := s.node.ListTerminals(r.Context(), sb)
	if err != nil {
		return actor.TerminalInfo{}, err
	}
	for _, i := range list {
		if i.ID == id {
			return i, nil
		}
	}
	return actor.TerminalInfo{}, notFound("terminal %q not found", id)
}

func (s *Server) resizeTerminal(w http.ResponseWriter, r *http.Request) error {
	size, err := decodeResize(r)
	if err != nil {
		return err
	}
	if err := s.node.ResizeTerminal(r.Context(), r.PathValue("sb"), r.PathValue("t"), size.Cols, size.Rows); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteTerminal(w http.ResponseWriter, r *http.Request) error {
	if err := s.node.DeleteTerminal(r.Context(), r.PathValue("sb"), r.PathValue("t")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
