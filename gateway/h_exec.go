package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

type execRequest struct {
	Command   *string           `json:"command"`
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	TimeoutMs *int64            `json:"timeout_ms"`
	Stdin     *string           `json:"stdin"`
}

// commandOf checks that exactly one of command and argv is given and returns the argv
// that will run, which is what a routing policy sees.
func commandOf(command *string, argv []string) ([]string, error) {
	switch {
	case command != nil && argv != nil:
		return nil, badRequest("give either command or argv, not both")
	case command != nil:
		if strings.TrimSpace(*command) == "" {
			return nil, badRequest("command is empty")
		}
		return []string{"/bin/sh", "-c", *command}, nil
	case len(argv) > 0:
		if argv[0] == "" {
			return nil, badRequest("argv[0] is empty")
		}
		return argv, nil
	}
	return nil, badRequest("command or argv is required")
}

func durationMs(field string, v *int64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, badRequest("%s must not be negative", field)
	}
	return time.Duration(*v) * time.Millisecond, nil
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var req execRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	command, err := commandOf(req.Command, req.Argv)
	if err != nil {
		return err
	}
	timeout, err := durationMs("timeout_ms", req.TimeoutMs)
	if err != nil {
		return err
	}
	if err := validateEnv(req.Env); err != nil {
		return err
	}
	if err := s.checkRoute(r, "POST "+sbPath+"/exec", nil, command); err != nil {
		return err
	}
	opts := runtime.ExecOptions{Argv: req.Argv, Cwd: req.Cwd, Env: req.Env, Timeout: timeout}
	if req.Command != nil {
		opts.Command = *req.Command
	}
	if req.Stdin != nil {
		opts.Stdin = []byte(*req.Stdin)
	}
	res, err := s.node.Exec(r.Context(), r.PathValue("sb"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderExec(res))
	return nil
}
