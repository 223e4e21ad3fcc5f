package gateway

import (
	"net/http"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

type createSessionRequest struct {
	ID        *string           `json:"id"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	Shell     string            `json:"shell"`
	TimeoutMs *int64            `json:"timeout_ms"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req createSessionRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	id, err := optionalID("session", req.ID)
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
	timeout, err := durationMs("timeout_ms", req.TimeoutMs)
	if err != nil {
		return err
	}
	info, created, err := s.node.CreateSession(r.Context(), r.PathValue("sb"), actor.SessionSpec{
		ID: id, Cwd: req.Cwd, Env: req.Env, Shell: req.Shell, Timeout: timeout,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, renderSession(info))
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	list, err := s.node.ListSessions(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	l := newJSONList(w, "sessions") // encoded item by item (list_stream.go)
	for _, i := range list {
		if err := l.add(renderSession(i)); err != nil {
			return s.listFailed(r, l, err)
		}
	}
	l.end()
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	info, err := s.node.GetSession(r.Context(), r.PathValue("sb"), r.PathValue("s"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderSession(info))
	return nil
}

type sessionExecRequest struct {
	Command   string            `json:"command"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	TimeoutMs *int64            `json:"timeout_ms"`
}

func (s *Server) sessionExec(w http.ResponseWriter, r *http.Request) error {
	var req sessionExecRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.Command == "" {
		return badRequest("command is required")
	}
	if err := noNULs("command", req.Command, "cwd", req.Cwd); err != nil {
		return err
	}
	if err := checkPaths("cwd", req.Cwd); err != nil {
		return err
	}
	if err := validateEnv(req.Env); err != nil {
		return err
	}
	timeout, err := durationMs("timeout_ms", req.TimeoutMs)
	if err != nil {
		return err
	}
	if err := s.checkRoute(r, "POST "+sessPath+"/exec", nil, []string{"/bin/bash", "-c", req.Command}); err != nil {
		return err
	}
	res, err := s.node.SessionExec(r.Context(), r.PathValue("sb"), r.PathValue("s"), runtime.SessionCommand{
		Command: req.Command, Cwd: req.Cwd, Env: req.Env, Timeout: timeout,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderSessionExec(res))
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.node.DeleteSession(r.Context(), r.PathValue("sb"), r.PathValue("s")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
