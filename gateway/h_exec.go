package gateway

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// commandFields are the fields exec and process creation share.
type commandFields struct {
	Command   *string           `json:"command"`
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	TimeoutMs *int64            `json:"timeout_ms"`
}

// check validates the fields and returns the argv a routing policy sees and the timeout.
func (c commandFields) check() (argv []string, timeout time.Duration, err error) {
	if argv, err = commandOf(c.Command, c.Argv); err != nil {
		return nil, 0, err
	}
	if timeout, err = durationMs("timeout_ms", c.TimeoutMs); err != nil {
		return nil, 0, err
	}
	if err := noNULs("command", c.shell(), "cwd", c.Cwd); err != nil {
		return nil, 0, err
	}
	if err := noNULArgv(c.Argv); err != nil {
		return nil, 0, err
	}
	if err := checkPaths("cwd", c.Cwd); err != nil {
		return nil, 0, err
	}
	return argv, timeout, validateEnv(c.Env)
}

// shell is the command string, or "" for an argv.
func (c commandFields) shell() string {
	if c.Command == nil {
		return ""
	}
	return *c.Command
}

type execRequest struct {
	commandFields
	Stdin *string `json:"stdin"`
}

// zero reports whether nothing was decoded into r yet (decodeExecFast needs it so).
func (r *execRequest) zero() bool {
	return r.Command == nil && r.Argv == nil && r.Cwd == "" && r.Env == nil && r.TimeoutMs == nil && r.Stdin == nil
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

// durationMs turns an optional field of milliseconds into a duration. A value longer
// than a time.Duration holds (about 292 years) is the longest one: multiplied as it
// is it would wrap around, and a timeout_ms of 18446744073710 killed its command
// after half a millisecond.
func durationMs(field string, v *int64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, badRequest("%s must not be negative", field)
	}
	return msDuration(*v), nil
}

// msDuration is v milliseconds, saturated at the longest time.Duration rather than
// wrapped around (v is not negative).
func msDuration(v int64) time.Duration {
	if v > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(v) * time.Millisecond
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var req execRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	command, timeout, err := req.check()
	if err != nil {
		return err
	}
	if err := checkCommandSize(req.shell(), req.Argv, "", ""); err != nil {
		return err
	}
	if err := s.checkRoute(r, "POST "+sbPath+"/exec", nil, command); err != nil {
		return err
	}
	opts := runtime.ExecOptions{Command: req.shell(), Argv: req.Argv, Cwd: req.Cwd, Env: req.Env, Timeout: timeout}
	if req.Stdin != nil {
		opts.Stdin = []byte(*req.Stdin)
	}
	res, err := s.node.Exec(r.Context(), r.PathValue("sb"), opts)
	if err != nil {
		return err
	}
	writeExec(w, res)
	return nil
}
