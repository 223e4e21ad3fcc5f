package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"path"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// ptyJSON is OpenCode's Pty object.
type ptyJSON struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Cwd     string   `json:"cwd"`
	Status  string   `json:"status"`
	PID     int      `json:"pid"`
	// ExitCode is set once the process exited: its code, or 128+n for a process ended
	// by signal n, as a shell reports it.
	ExitCode *int `json:"exitCode,omitempty"`
}

// renderPty renders a PTY process as OpenCode's Pty: the argv it runs as command and
// args (a command string runs as /bin/sh -c), its label as the title (or, without
// one, the command's base name).
func renderPty(in runtime.ProcessInfo) ptyJSON {
	p := ptyJSON{ID: in.ID, Title: in.Label, Args: []string{}, Cwd: in.Cwd, Status: string(in.Status), PID: in.PID}
	switch {
	case len(in.Argv) > 0:
		p.Command, p.Args = in.Argv[0], append(p.Args, in.Argv[1:]...)
	case in.Command != "":
		p.Command, p.Args = "/bin/sh", []string{"-c", in.Command}
	}
	if p.Title == "" {
		p.Title = path.Base(p.Command)
	}
	if in.Exit != nil {
		code := in.Exit.Code
		if in.Exit.Signal != "" {
			if sig, err := runtime.ParseSignal(in.Exit.Signal); err == nil {
				code = 128 + int(sig)
			}
		}
		p.ExitCode = &code
	}
	return p
}

// openCodeError marks an error of an OpenCode route's handler: it is rendered in
// OpenCode's error shape and sandgate's at once (writeOpenCodeError). Errors of the
// wrapper (token, ids, tenancy, an unknown sandbox) are not marked: they stay
// sandgate's, as on every route.
type openCodeError struct {
	pty string // the path's pty id, if any
	err error
}

func (e *openCodeError) Error() string { return e.err.Error() }
func (e *openCodeError) Unwrap() error { return e.err }

// ocErr marks err, if any, as an OpenCode route's.
func ocErr(r *http.Request, err error) error {
	if err == nil {
		return nil
	}
	return &openCodeError{pty: r.PathValue("ptyID"), err: err}
}

// openCodeBody returns the OpenCode fields of an error body, or nil when sandgate's
// shape alone says it: a 404 for the pty is PtyNotFoundError, a 400 both of the
// shapes OpenCode's client types declare for it (BadRequestError's name and data,
// InvalidRequestError's _tag and message), a 403 PtyForbiddenError.
func openCodeBody(oc *openCodeError, e *apiError) map[string]any {
	switch e.Status {
	case http.StatusNotFound:
		var nf *actor.NotFoundError
		if oc.pty == "" || errors.As(oc.err, &nf) && nf.What == "sandbox" {
			return nil
		}
		e.Message = fmt.Sprintf("pty %q not found", oc.pty) // a process, a pty or a terminal's shell
		return map[string]any{"_tag": "PtyNotFoundError", "ptyID": oc.pty, "message": e.Message}
	case http.StatusBadRequest:
		return map[string]any{"_tag": "InvalidRequestError", "message": e.Message,
			"name": "BadRequest", "data": map[string]any{"message": e.Message}}
	case http.StatusForbidden:
		return map[string]any{"_tag": "PtyForbiddenError", "message": e.Message}
	}
	return nil
}

// writeOpenCodeError writes e with OpenCode's fields beside sandgate's "error", so
// that clients of either kind read it.
func writeOpenCodeError(w http.ResponseWriter, oc *openCodeError, e *apiError) {
	body := openCodeBody(oc, e)
	if body == nil {
		writeAPIError(w, e)
		return
	}
	body["error"] = map[string]string{"code": e.Code, "message": e.Message}
	setRetryAfter(w, e)
	writeJSON(w, e.Status, body)
}

// ptyNotFound is the error for a process that is no PTY (or no process): to OpenCode's
// API it does not exist.
func ptyNotFound(id string) error {
	return &actor.NotFoundError{What: "pty", ID: id}
}

// isPtyNotFound reports whether err says a process (or pty) is unknown, not the
// sandbox.
func isPtyNotFound(err error) bool {
	var nf *actor.NotFoundError
	return errors.As(err, &nf) && nf.What != "sandbox"
}
