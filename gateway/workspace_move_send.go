package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/runtime"
)

// The old owner's side of moving workspaces (workspace_move.go, steps 1 and 3).

// moveWorkspaces announces the workspaces of ids to h's new owner and streams those it
// awaits in the background, on s.moves. It returns once the announcement is answered.
func (s *Server) moveWorkspaces(h cluster.Handoff, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.streamCtx, moveCatchUp+peerTimeout)
	awaited, err := s.announceWorkspaces(ctx, h, ids)
	cancel()
	if err != nil {
		s.metrics.moves.WithLabelValues(moveSent, moveFailed).Add(float64(len(ids)))
		s.log.Warn("workspaces not moved: the new owner reports them lost", "to", h.To, "sandboxes", len(ids), "err", err)
		return
	}
	if n := len(ids) - len(awaited); n > 0 {
		s.metrics.moves.WithLabelValues(moveSent, moveFailed).Add(float64(n))
		s.log.Warn("the new owner does not await some workspaces: they are lost", "to", h.To, "sandboxes", n)
	}
	s.moves.run(func() {
		var mu sync.Mutex
		var sent []string // installed by the new owner: this node's copy goes once h completed
		defer func() { s.dropDelivered(s.streamCtx, h, sent) }()
		inParallel(s.streamCtx, awaited, func(sb string) {
			if !s.moves.acquire(s.streamCtx) {
				return // shutting down: the new owner stops waiting when this node is gone
			}
			defer s.moves.release()
			began := time.Now()
			st, err := s.sendWorkspace(s.streamCtx, h, sb)
			if err != nil {
				s.metrics.moves.WithLabelValues(moveSent, moveFailed).Inc()
				s.log.Warn("workspace not moved: the new owner reports it lost", "sandbox", sb, "err", err)
				return
			}
			mu.Lock()
			sent = append(sent, sb)
			mu.Unlock()
			s.metrics.moves.WithLabelValues(moveSent, moveOK).Inc()
			s.metrics.moveBytes.Add(float64(st.Bytes))
			s.log.Debug("workspace moved", "sandbox", sb, "to", h.To, "files", st.Files, "bytes", st.Bytes,
				"took", time.Since(began))
		})
	})
}

// announceWorkspaces tells h's new owner which workspaces are coming and returns those
// it awaits.
func (s *Server) announceWorkspaces(ctx context.Context, h cluster.Handoff, ids []string) ([]string, error) {
	addr := s.fwd.addrOf(s.cluster, h.To)
	if addr == "" {
		return nil, fmt.Errorf("%w: %s is not alive", errMoveRefused, h.To)
	}
	b, err := json.Marshal(announceJSON{Epoch: h.Epoch, Sandboxes: ids})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/cluster/workspaces", io.NopCloser(bytes.NewReader(b)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	signNodeRequest(s.secret, req, string(s.cluster.ID()), time.Now())
	resp, err := s.fwd.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("failed to announce workspaces to %s: %w", h.To, err)
	}
	defer resp.Body.Close()
	var out announceJSON
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("%w: %s: %s", errMoveRefused, resp.Status, msg)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnnounce)).Decode(&out); err != nil {
		return nil, fmt.Errorf("failed to read the announcement's answer: %w", err)
	}
	return out.Sandboxes, nil
}

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
		// The new owner awaits it: tell it that nothing comes, so it serves the
		// sandbox now, without a workspace, rather than when the wait times out.
		return st, errors.Join(err, s.abortWorkspace(ctx, addr, h, sb))
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

// abortWorkspace tells the new owner at addr that sb's announced workspace does not
// come.
func (s *Server) abortWorkspace(ctx context.Context, addr string, h cluster.Handoff, sb string) error {
	u := "http://" + addr + "/v1/cluster/workspaces/" + sb + "?epoch=" + strconv.FormatUint(h.Epoch, 10) + "&abort=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, io.NopCloser(bytes.NewReader(nil)))
	if err != nil {
		return err
	}
	req.Header.Set(diskBytesHeader, "0")
	signNodeRequest(s.secret, req, string(s.cluster.ID()), time.Now())
	resp, err := s.fwd.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("failed to abort the workspace stream: %w", err)
	}
	resp.Body.Close()
	return nil
}

// moveRunner runs the background workspace streams of a server, at most
// handoffWorkers at once whatever the number of handoffs. close stops new ones and
// waits for those running (their context is the server's stream context, which
// Shutdown cancels first).
type moveRunner struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	sem    chan struct{} // made on first use
	once   sync.Once
}

// acquire takes one of the server's stream slots, or reports false once ctx is done.
func (m *moveRunner) acquire(ctx context.Context) bool {
	m.once.Do(func() { m.sem = make(chan struct{}, handoffWorkers) })
	select {
	case m.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release gives back a slot acquire took.
func (m *moveRunner) release() { <-m.sem }

// run starts f on a goroutine unless the runner is closed.
func (m *moveRunner) run(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.wg.Go(f)
	}
}

// close stops new runs and waits for those running. Calling it again waits again.
func (m *moveRunner) close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.wg.Wait()
}

// moveBodyHook, when set (tests), wraps the body of each workspace stream this node
// sends.
type moveBodyHook = atomic.Pointer[func(sb string, r io.Reader) io.Reader]
