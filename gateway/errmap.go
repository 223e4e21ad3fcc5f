package gateway

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// errorRule maps errors matching any of errs to a status and code.
type errorRule struct {
	errs   []error
	status int
	code   string
}

// errorRules is the whole mapping from our packages' errors to the contract's codes.
var errorRules = []errorRule{
	{[]error{actor.ErrNotFound, runtime.ErrNotFound, fs.ErrNotExist}, http.StatusNotFound, codeNotFound},
	{[]error{actor.ErrInvalid, runtime.ErrInvalid, runtime.ErrBadSignal, runtime.ErrEscapes}, http.StatusBadRequest, codeInvalidArgument},
	{[]error{actor.ErrConflict, runtime.ErrDuplicateID, runtime.ErrSessionDead, runtime.ErrExited, runtime.ErrStdinClosed,
		runtime.ErrNotPTY, runtime.ErrIsDir, runtime.ErrNotDir, runtime.ErrNotEmpty, runtime.ErrExist, fs.ErrExist},
		http.StatusConflict, codeConflict},
	{[]error{actor.ErrExpired}, http.StatusGone, codeExpired},
	{[]error{actor.ErrTooLarge, runtime.ErrEnvTooLarge}, http.StatusRequestEntityTooLarge, codeTooLarge},
	{[]error{actor.ErrBudgetExceeded, runtime.ErrTooManyProcesses}, http.StatusTooManyRequests, codeBudgetExceeded},
	// A sandbox whose stored records cannot be read (actor.ErrCorrupt: a damaged
	// actors.db) is unavailable; its message says so, and the other sandboxes serve.
	// A sandbox whose init holds an expired node lease (runtime.ErrLeaseExpired) runs
	// nothing until the server renews it: unavailable for now, like a fenced node.
	{[]error{actor.ErrMailboxFull, actor.ErrUnavailable, actor.ErrCorrupt, runtime.ErrLeaseExpired}, http.StatusServiceUnavailable, codeUnavailable},
	// Membership changes (join, remove, the token table) on the leader.
	{[]error{cluster.ErrInvalid}, http.StatusBadRequest, codeInvalidArgument},
	{[]error{cluster.ErrUnknownMember}, http.StatusNotFound, codeNotFound},
	{[]error{cluster.ErrLastVoter, cluster.ErrMemberAlive}, http.StatusConflict, codeConflict},
	// A write the cluster refused because the sandbox moved meanwhile (fenced), or
	// whose outcome is unknown (its leader changed): the client may retry, and the
	// retry goes to the owner of the moment.
	{[]error{cluster.ErrClosed, cluster.ErrNotLeader, cluster.ErrIndeterminate, actor.ErrFenced}, http.StatusServiceUnavailable, codeUnavailable},
	// A sandbox whose partition is moving to another node (a drain): the forwarder
	// holds such requests; one that meets it past the hold is worth a retry.
	{[]error{cluster.ErrHandoff}, http.StatusServiceUnavailable, codeUnavailable},
}

// toAPIError turns any error into the status, code and message the client sees. It is
// the only place that knows how our packages' errors map onto the contract.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, rule := range errorRules {
		for _, target := range rule.errs {
			if errors.Is(err, target) {
				// Where the sentinel's text is the code in words, the code says it
				// already: "conflict: sandbox x exists…" reads "sandbox x exists…".
				msg := humanMessage(err)
				word := strings.ReplaceAll(rule.code, "_", " ")
				if rest, ok := strings.CutPrefix(msg, word+": "); ok && rest != "" && humanMessage(target) == word {
					msg = rest
				}
				e := &apiError{Status: rule.status, Code: rule.code, Message: msg}
				// Both may pass: a mailbox drains, a running process exits. A rate
				// budget knows when; anything else is worth a retry in a second.
				switch rule.status {
				case http.StatusServiceUnavailable, http.StatusTooManyRequests:
					e.RetryAfter = time.Second
					var be *actor.BudgetError
					if errors.As(err, &be) && be.RetryAfter > 0 {
						e.RetryAfter = be.RetryAfter
					}
				}
				return e
			}
		}
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// A full workspace: with disk images its disk_bytes budget is used up, so it is
		// the contract's 429 budget_exceeded, with no Retry-After: waiting frees nothing,
		// deleting files does. (Without images it is the server's disk that is full.)
		// After the rules: the node's own storage failing on a full disk is unavailable.
		return errorf(http.StatusTooManyRequests, codeBudgetExceeded,
			"the workspace is full (its disk_bytes budget, or the server's disk): %s", humanMessage(err))
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "request body over %d bytes", mbe.Limit)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "request timed out")
	}
	return errorf(http.StatusInternalServerError, codeInternal, "internal error")
}

// humanMessage strips our packages' "actor: ", "runtime: " and "cluster: " prefixes, which help in
// logs but read oddly in an API message.
func humanMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"actor: ", "runtime: ", "cluster: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// writeError renders err for the client. A client that went away gets nothing; an
// internal error is logged with the request id, and the client sees only that id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	e := toAPIError(err)
	if e.Status == http.StatusInternalServerError {
		id := w.Header().Get("X-Request-Id")
		s.log.Error("internal error", "id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		e = errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", id)
	}
	if rec, ok := w.(*statusRecorder); ok && rec.status != 0 {
		return // headers already sent (a stream failed midway); nothing more to say
	}
	closeIfBodyUnread(w, r)
	var oc *openCodeError
	if errors.As(err, &oc) {
		writeOpenCodeError(w, oc, e) // OpenCode's routes: both shapes in one body
		return
	}
	writeAPIError(w, e)
}
