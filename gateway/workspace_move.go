package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// Workspaces in a planned move (docs/design.md, "Planned moves"). Files stay on the
// node that wrote them, so when a handoff moves a sandbox whose old owner is alive, the
// old owner streams its workspace to the new one, which does not run the sandbox
// before it arrived:
//
//  1. The old owner's hook (handOff) ends the handoff's activations. Then it
//     announces to the new owner, in one request, every sandbox of the handoff whose
//     workspace it holds (POST /v1/cluster/workspaces), and returns, so the handoff
//     is reported and completes without waiting for the streams.
//  2. The new owner waits until its table has the handoff and takes each announced
//     sandbox that the handoff gives it at that epoch: from then its admission
//     refuses the sandbox (cluster.ErrHandoff: requests are held), even once the
//     handoff completed, until its workspace arrived or failed, the announcement
//     expired (moveTimeout without a stream), or the old owner is no longer alive.
//  3. The old owner streams the announced workspaces in the background, up to
//     handoffWorkers at once per node (workspace_move_send.go): each a tar stream
//     (actor.Node.ExportWorkspace) PUT to /v1/cluster/workspaces/{sb}.
//  4. The new owner takes a stream only for a sandbox announced to it and still
//     waiting. actor.Node.ImportWorkspace unpacks it beside the target and, once it
//     ended and its body MAC checked, renames it into place. Anything else installs
//     nothing and removes what an earlier stay here left, so the sandbox's
//     sandbox.moved names the workspace lost as after a crash.
//
// Every request is signed with the cluster secret (node_auth.go); these routes take no
// API token. The old owner keeps its copy while the handoff can still be aborted (the
// target died) and give the partition back; once the new owner installed it and the
// handoff completed, the copy is removed (workspace_cleanup.go).

const (
	// workspaceRoute receives one workspace; announceRoute the list of those coming.
	workspaceRoute = "PUT /v1/cluster/workspaces/{sb}"
	announceRoute  = "POST /v1/cluster/workspaces"
	// diskBytesHeader carries the size of the workspace's disk image (0: none).
	diskBytesHeader = "X-Sandgate-Disk-Bytes"
	// moveCatchUp bounds how long the new owner waits for its table to show the
	// handoff the old owner saw before it announced.
	moveCatchUp = 5 * time.Second
	// moveTimeout bounds one workspace stream, and how long an announced workspace
	// is waited for.
	moveTimeout = 10 * time.Minute
	// maxAnnounce bounds an announcement's body: about 200,000 sandbox ids.
	maxAnnounce = 16 << 20
	// DefaultWorkspaceMoveMax is Config.WorkspaceMoveMax's default: 4 GiB of files.
	DefaultWorkspaceMoveMax = 4 << 30
)

// Labels of sandgate_workspace_moves_total.
const (
	moveSent, moveReceived = "sent", "received"
	moveOK, moveFailed     = "ok", "failed"
)

// errMoveRefused is a workspace stream or announcement the other node refused.
var errMoveRefused = errors.New("gateway: workspace stream refused")

// announceJSON is the body of announceRoute, and of its answer (Sandboxes: those the
// new owner waits for).
type announceJSON struct {
	Epoch     uint64   `json:"epoch"`
	Sandboxes []string `json:"sandboxes"`
}

// nodeRefused answers a request whose node signature did not check.
func (s *Server) nodeRefused(r *http.Request, err error) error {
	s.log.Warn("refused a node-to-node request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
	return errorf(http.StatusUnauthorized, codeUnauthorized, "this route takes requests from cluster members only")
}

// receiveAnnounce is announceRoute, the new owner's side of step 2.
func (s *Server) receiveAnnounce(w http.ResponseWriter, r *http.Request) error {
	nr, err := verifyNodeRequest(s.secret, r, time.Now())
	if err != nil {
		return s.nodeRefused(r, err)
	}
	var a announceJSON
	if err := json.NewDecoder(io.LimitReader(nr, maxAnnounce)).Decode(&a); err != nil {
		return badRequest("invalid announcement: %v", err)
	}
	if err := nr.verify(); err != nil {
		return s.nodeRefused(r, err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), moveCatchUp)
	err = s.cluster.WaitApplied(ctx, a.Epoch)
	cancel()
	if err != nil {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "this node's table did not reach the handoff at %d: %v", a.Epoch, err)
	}
	self := s.cluster.ID()
	until := time.Now().Add(moveTimeout)
	taken := announceJSON{Epoch: a.Epoch, Sandboxes: []string{}}
	for _, sb := range a.Sandboxes {
		if !runtime.ValidID(sb) {
			continue
		}
		p := s.cluster.Placement(sb) // its pin's assignment when a drain moves its pin
		if p.State != cluster.PartitionHandoff || p.Next != self || p.Epoch != a.Epoch || p.Owner != cluster.NodeID(nr.from) {
			continue // not handed to this node by the sender at that epoch (now)
		}
		if s.handoffs.announce(sb, a.Epoch, cluster.NodeID(nr.from), until) {
			taken.Sandboxes = append(taken.Sandboxes, sb)
		}
	}
	writeJSON(w, http.StatusOK, taken)
	return nil
}

// failedReader fails every read with err: an import of it installs nothing and
// removes what an earlier stay left.
type failedReader struct{ err error }

func (f failedReader) Read([]byte) (int, error) { return 0, f.err }

// receiveWorkspace is workspaceRoute, the new owner's side of step 4.
func (s *Server) receiveWorkspace(w http.ResponseWriter, r *http.Request) error {
	nr, err := verifyNodeRequest(s.secret, r, time.Now())
	if err != nil {
		return s.nodeRefused(r, err)
	}
	sb := r.PathValue("sb")
	epoch, err := strconv.ParseUint(r.URL.Query().Get("epoch"), 10, 64)
	if err != nil {
		return badRequest("epoch must be a handoff's epoch, not %q", r.URL.Query().Get("epoch"))
	}
	disk, err := strconv.ParseInt(r.Header.Get(diskBytesHeader), 10, 64)
	if err != nil || disk < 0 {
		return badRequest("%s must be a byte count", diskBytesHeader)
	}
	if !s.handoffs.receive(sb, epoch, cluster.NodeID(nr.from)) {
		return errorf(http.StatusConflict, codeConflict, "no workspace of sandbox %s is awaited from %s at epoch %d", sb, nr.from, epoch)
	}
	defer s.handoffs.arrived(sb)
	ctx, cancel := s.requestContext(r)
	defer cancel()
	var body io.Reader = nr
	if r.URL.Query().Get("abort") != "" { // the old owner could not read it (signed in the URI)
		body = failedReader{fmt.Errorf("%w: the old owner could not send it", errMoveRefused)}
	}
	self := s.cluster.ID()
	err = s.node.ImportWorkspace(ctx, sb, body, actor.ImportOptions{
		DiskBytes: disk,
		MaxBytes:  s.cfg.WorkspaceMoveMax,
		Install: func() error {
			if err := nr.verify(); err != nil {
				return err
			}
			// Nothing ran the sandbox here since the announcement; the partition
			// must still be coming here, or be here.
			if p := s.cluster.Placement(sb); p.Owner != self && (p.State != cluster.PartitionHandoff || p.Next != self) {
				return fmt.Errorf("%w: sandbox %s moved elsewhere during the stream", errMoveRefused, sb)
			}
			return nil
		},
	})
	result := moveOK
	if err != nil {
		result = moveFailed
	}
	s.metrics.moves.WithLabelValues(moveReceived, result).Inc()
	switch {
	case err == nil:
		s.log.Info("received a sandbox's workspace for a planned move", "sandbox", sb, "from", nr.from)
		w.WriteHeader(http.StatusNoContent)
		return nil
	case errors.Is(err, runtime.ErrWorkspaceTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "%v", err)
	case errors.Is(err, errNodeAuth):
		return s.nodeRefused(r, err)
	}
	s.log.Warn("failed to receive a sandbox's workspace: it is lost", "sandbox", sb, "from", nr.from, "err", err)
	return errorf(http.StatusServiceUnavailable, codeUnavailable, "%v", err)
}
