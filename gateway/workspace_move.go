package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// Workspaces in a planned move (docs/design.md, "Planned moves"). Files stay on the
// node that wrote them, so when a handoff moves a sandbox whose old owner is alive, the
// old owner streams its workspace to the new one before the new one runs it:
//
//  1. The old owner's hook (handOff) ends the sandbox's activation, then exports the
//     workspace (actor.Node.ExportWorkspace: a tar stream) and PUTs it to the new
//     owner's HTTP address at /v1/cluster/workspaces/{sb}?epoch=<the handoff's>,
//     signed with the cluster secret (node_auth.go). Sandboxes it holds a workspace
//     of but does not run go the same way. Up to handoffWorkers at once.
//  2. The new owner checks the signature, waits until its table has the handoff,
//     and takes the sandbox only while the handoff gives it to this node at that
//     epoch. From then until the import ends, its admission refuses the sandbox here
//     (cluster.ErrHandoff, so requests are held), even once the leader completed the
//     handoff: nothing runs the sandbox on a half-written workspace.
//  3. actor.Node.ImportWorkspace unpacks the stream beside the target and, once it
//     ended, its body MAC checked and the partition is still (or now) this node's,
//     renames it into place. Anything else installs nothing and removes what an
//     earlier stay here left, so the sandbox's sandbox.moved names the workspace lost
//     as after a crash.
//
// The old owner keeps its copy: a handoff can still be aborted (the target died) and
// give the partition back. What it keeps is a leftover once the move completed; a
// later planned move back to it replaces it.

const (
	// workspaceRoute is the node-to-node route that receives a workspace.
	workspaceRoute = "PUT /v1/cluster/workspaces/{sb}"
	// diskBytesHeader carries the size of the workspace's disk image (0: none).
	diskBytesHeader = "X-Sandgate-Disk-Bytes"
	// moveCatchUp bounds how long the new owner waits for its table to show the
	// handoff the old owner saw before it sent.
	moveCatchUp = 5 * time.Second
	// moveTimeout bounds one workspace stream.
	moveTimeout = 10 * time.Minute
	// DefaultWorkspaceMoveMax is Config.WorkspaceMoveMax's default: 4 GiB of files.
	DefaultWorkspaceMoveMax = 4 << 30
)

// Labels of sandgate_workspace_moves_total.
const (
	moveSent, moveReceived = "sent", "received"
	moveOK, moveFailed     = "ok", "failed"
)

// errMoveRefused is a workspace stream the new owner answered with an error.
var errMoveRefused = errors.New("gateway: workspace stream refused")

// sendWorkspace streams sandbox sb's workspace to h's new owner. The sandbox must not
// be active here.
func (s *Server) sendWorkspace(ctx context.Context, h cluster.Handoff, sb string) (st runtime.PackStats, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("failed to send the workspace of %s to %s: %w", sb, h.To, err)
		}
	}()
	addr := s.fwd.addrOf(s.cluster, h.To)
	if addr == "" {
		return st, fmt.Errorf("%w: %s is not alive", errMoveRefused, h.To)
	}
	ctx, cancel := context.WithTimeout(ctx, moveTimeout)
	defer cancel()
	e, err := s.node.ExportWorkspace(ctx, sb)
	if err != nil {
		return st, err
	}
	defer e.Close()
	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() {
		var err error
		st, err = e.Pack(ctx, pw, runtime.PackOptions{MaxBytes: s.cfg.WorkspaceMoveMax})
		pw.CloseWithError(err)
		packed <- err
	}()
	var body io.Reader = pr
	if f := s.moveBodyHook.Load(); f != nil {
		body = (*f)(sb, body)
	}
	u := "http://" + addr + "/v1/cluster/workspaces/" + sb + "?epoch=" + strconv.FormatUint(h.Epoch, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, io.NopCloser(body))
	if err != nil {
		pr.CloseWithError(err)
		<-packed
		return st, err
	}
	req.Header.Set(diskBytesHeader, strconv.FormatInt(e.DiskBytes, 10))
	req.Header.Set("Content-Type", "application/x-tar")
	signNodeRequest(s.secret, req, string(s.cluster.ID()), time.Now())
	resp, err := s.fwd.transport.RoundTrip(req)
	pr.CloseWithError(errMoveRefused) // a receiver that answered early read no more
	perr := <-packed
	if err != nil {
		return st, errors.Join(err, perr)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusNoContent {
		return st, errors.Join(fmt.Errorf("%w: %s: %s", errMoveRefused, resp.Status, msg), perr)
	}
	return st, perr
}

// receiveWorkspace is workspaceRoute, the new owner's side (see the top of this file).
func (s *Server) receiveWorkspace(w http.ResponseWriter, r *http.Request) error {
	nr, err := verifyNodeRequest(s.secret, r, time.Now())
	if err != nil {
		s.log.Warn("refused a workspace stream", "remote", r.RemoteAddr, "err", err)
		return errorf(http.StatusUnauthorized, codeUnauthorized, "this route takes requests from cluster members only")
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
	ctx, cancel := s.requestContext(r)
	defer cancel()
	self, part := s.cluster.ID(), cluster.PartitionOf(sb)
	toUs := func(installing bool) bool {
		a := s.cluster.Partition(part)
		if a.State == cluster.PartitionHandoff {
			return a.Next == self && a.Epoch == epoch
		}
		// Completed meanwhile: this node has refused the sandbox since the stream
		// began (arriving), so nothing ran it here yet.
		return installing && a.Owner == self && a.Epoch > epoch
	}
	wait, stop := context.WithTimeout(ctx, moveCatchUp)
	err = s.cluster.WaitApplied(wait, epoch)
	stop()
	if err != nil || !toUs(false) {
		return errorf(http.StatusConflict, codeConflict, "sandbox %s is not being handed to this node at epoch %d", sb, epoch)
	}
	if !s.handoffs.arrive(sb) {
		return errorf(http.StatusConflict, codeConflict, "a workspace of sandbox %s is already arriving", sb)
	}
	defer s.handoffs.arrived(sb)
	if !toUs(false) { // checked again now that this node refuses the sandbox
		return errorf(http.StatusConflict, codeConflict, "sandbox %s is no longer being handed to this node", sb)
	}
	err = s.node.ImportWorkspace(ctx, sb, nr, actor.ImportOptions{
		DiskBytes: disk,
		MaxBytes:  s.cfg.WorkspaceMoveMax,
		Install: func() error {
			if err := nr.verify(); err != nil {
				return err
			}
			if !toUs(true) {
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
		return errorf(http.StatusUnauthorized, codeUnauthorized, "%v", err)
	}
	s.log.Warn("failed to receive a sandbox's workspace: it is lost", "sandbox", sb, "from", nr.from, "err", err)
	return errorf(http.StatusServiceUnavailable, codeUnavailable, "%v", err)
}

// arrive marks sb's workspace as arriving: until arrived, admission refuses sb on this
// node. It reports false when one already is.
func (g *handoffGate) arrive(sb string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.incoming[sb] {
		return false
	}
	if g.incoming == nil {
		g.incoming = map[string]bool{}
	}
	g.incoming[sb] = true
	g.arriving.Add(1)
	return true
}

// arrived ends what arrive began.
func (g *handoffGate) arrived(sb string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.incoming[sb] {
		delete(g.incoming, sb)
		g.arriving.Add(-1)
	}
}

// isArriving reports whether sb's workspace is arriving. The common path takes no lock.
func (g *handoffGate) isArriving(sb string) bool {
	if g.arriving.Load() == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.incoming[sb]
}

// serve is the request path's admission: the cluster's, except that a sandbox whose
// workspace is arriving is held as one in handoff is.
func (g *handoffGate) serve(sb string) error {
	if g.isArriving(sb) {
		return cluster.ErrHandoff
	}
	return g.cn.Admit(sb)
}

// moveBodyHook, when set (tests), wraps the body of each workspace stream this node
// sends.
type moveBodyHook = atomic.Pointer[func(sb string, r io.Reader) io.Reader]
