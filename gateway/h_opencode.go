package gateway

import (
	"errors"
	"maps"
	"net/http"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// maxTitle bounds a pty's title (its process label), in bytes.
const maxTitle = 1024

func (s *Server) opencodeShells(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.openCodeDirectory(r); err != nil {
		return ocErr(r, err)
	}
	if err := s.checkRouteAs(r, "POST "+sbPath+"/exec", []string{"/bin/sh", "-c", shellsScript}); err != nil {
		return ocErr(r, err)
	}
	list, _, err := s.sandboxShells(r.Context(), r.PathValue("sb"))
	if err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) opencodeList(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.openCodeDirectory(r); err != nil {
		return ocErr(r, err)
	}
	list, err := s.node.ListProcesses(r.Context(), r.PathValue("sb"))
	if err != nil {
		return ocErr(r, err)
	}
	out := []ptyJSON{}
	for _, in := range list {
		if in.PTY {
			out = append(out, renderPty(in))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ocCreateRequest is OpenCode's create body.
type ocCreateRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Title   string            `json:"title"`
	Env     map[string]string `json:"env"`
}

// opencodeCreate starts a PTY process, as POST /processes with pty does. What the
// body leaves out: command is the sandbox's preferred shell (sandboxShells; args then
// go to it), cwd the request's directory or else the workspace, the size 80x24, and
// TERM=xterm-256color unless env sets TERM. The answer is 200, as OpenCode's.
func (s *Server) opencodeCreate(w http.ResponseWriter, r *http.Request) error {
	var req ocCreateRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return ocErr(r, err)
	}
	if err := checkCreate(&req); err != nil {
		return ocErr(r, err)
	}
	dir, err := s.openCodeDirectory(r)
	if err != nil {
		return ocErr(r, err)
	}
	sb := r.PathValue("sb")
	if req.Command == "" {
		_, shell, err := s.sandboxShells(r.Context(), sb)
		if err != nil {
			return ocErr(r, err)
		}
		req.Command = shell
	}
	argv := append([]string{req.Command}, req.Args...)
	if err := s.checkRouteAs(r, "POST "+sbPath+"/processes", argv); err != nil {
		return ocErr(r, err)
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = dir
	}
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["TERM"]; !ok {
		env["TERM"] = "xterm-256color"
	}
	size := runtime.WinSize{Cols: 80, Rows: 24}
	info, err := s.node.StartProcess(r.Context(), sb, runtime.StartOptions{
		Argv: argv, Cwd: cwd, Env: env, Label: req.Title, PTY: &size,
	})
	if err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, renderPty(info))
	return nil
}

// checkCreate validates a create body as POST /processes validates its fields.
func checkCreate(req *ocCreateRequest) error {
	if err := noNULs("command", req.Command, "cwd", req.Cwd, "title", req.Title); err != nil {
		return err
	}
	if err := noNULArgv(req.Args); err != nil {
		return err
	}
	if len(req.Title) > maxTitle {
		return badRequest("title is over %d bytes", maxTitle)
	}
	if err := checkPaths("cwd", req.Cwd); err != nil {
		return err
	}
	if err := checkCommandSize(req.Command, req.Args, "", ""); err != nil {
		return err
	}
	return validateEnv(req.Env)
}

// ptyInfo checks the request's directory (see openCodeDirectory) and returns the
// request's pty: a PTY process of the sandbox. Any other process is, to OpenCode's
// API, no pty.
func (s *Server) ptyInfo(r *http.Request) (runtime.ProcessInfo, error) {
	if _, err := s.openCodeDirectory(r); err != nil {
		return runtime.ProcessInfo{}, err
	}
	id := r.PathValue("ptyID")
	info, err := s.node.ProcessInfo(r.Context(), r.PathValue("sb"), id)
	if err != nil {
		return runtime.ProcessInfo{}, err
	}
	if !info.PTY {
		return runtime.ProcessInfo{}, ptyNotFound(id)
	}
	return info, nil
}

func (s *Server) opencodeGet(w http.ResponseWriter, r *http.Request) error {
	info, err := s.ptyInfo(r)
	if err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, renderPty(info))
	return nil
}

// ocUpdateRequest is OpenCode's update body.
type ocUpdateRequest struct {
	Title *string `json:"title"`
	Size  *struct {
		Rows uint16 `json:"rows"`
		Cols uint16 `json:"cols"`
	} `json:"size"`
}

// opencodeUpdate resizes the pty (as POST …/resize) and sets its title (the process
// label, which its exited record keeps), in that order, and answers the pty.
func (s *Server) opencodeUpdate(w http.ResponseWriter, r *http.Request) error {
	var req ocUpdateRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return ocErr(r, err)
	}
	if req.Title != nil {
		if err := noNULs("title", *req.Title); err != nil {
			return ocErr(r, err)
		}
		if len(*req.Title) > maxTitle {
			return ocErr(r, badRequest("title is over %d bytes", maxTitle))
		}
	}
	var size runtime.WinSize
	if req.Size != nil {
		var err error
		if size, err = winSize(req.Size.Cols, req.Size.Rows, false); err != nil {
			return ocErr(r, err)
		}
	}
	info, err := s.ptyInfo(r)
	if err != nil {
		return ocErr(r, err)
	}
	sb, id := r.PathValue("sb"), r.PathValue("ptyID")
	if req.Size != nil {
		p, err := s.node.Process(r.Context(), sb, id)
		if err == nil {
			err = p.Resize(size.Cols, size.Rows)
		}
		if err != nil {
			return ocErr(r, err)
		}
	}
	if req.Title != nil {
		info, err = s.node.SetProcessLabel(r.Context(), sb, id, *req.Title)
	} else if req.Size != nil {
		info, err = s.node.ProcessInfo(r.Context(), sb, id) // the new size
	}
	if err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, renderPty(info))
	return nil
}

// opencodeRemove is DELETE of the process: its whole tree is killed and its record
// dropped. A terminal's shell takes its terminal with it, or the next request for the
// terminal would start a new shell. The answer is true, as OpenCode's.
func (s *Server) opencodeRemove(w http.ResponseWriter, r *http.Request) error {
	info, err := s.ptyInfo(r)
	if err != nil {
		return ocErr(r, err)
	}
	sb := r.PathValue("sb")
	if t, ok := terminalOf(info); ok {
		if err := s.node.DeleteTerminal(r.Context(), sb, t); err != nil && !errors.Is(err, actor.ErrNotFound) {
			return ocErr(r, err)
		}
	}
	if err := s.node.DeleteProcess(r.Context(), sb, info.ID); err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// terminalOf returns the terminal id of a terminal's shell process.
func terminalOf(in runtime.ProcessInfo) (string, bool) {
	const prefix = "terminal:"
	if len(in.Tag) > len(prefix) && in.Tag[:len(prefix)] == prefix {
		return in.Tag[len(prefix):], true
	}
	return "", false
}

// ticketJSON is OpenCode's connect-token answer.
type ticketJSON struct {
	Ticket    string `json:"ticket"`
	ExpiresIn int    `json:"expires_in"` // seconds
}

// opencodeConnectToken issues a ticket for the pty's connect WebSocket: single use,
// for this pty only, as the caller's tenant, within ticketTTL, on this node (the
// sandbox's owner, where the connect is served too).
func (s *Server) opencodeConnectToken(w http.ResponseWriter, r *http.Request) error {
	var none struct{} // OpenCode's client sends no body; an empty object is as good
	if err := decodeJSON(r, maxJSONBody, &none); err != nil {
		return ocErr(r, err)
	}
	info, err := s.ptyInfo(r)
	if err != nil {
		return ocErr(r, err)
	}
	text, err := s.tickets.issue(principalOf(r.Context()), r.PathValue("sb"), info.ID)
	if err != nil {
		return ocErr(r, err)
	}
	writeJSON(w, http.StatusOK, ticketJSON{Ticket: text, ExpiresIn: int(ticketTTL.Seconds())})
	return nil
}
