package runtime

import (
	"context"
	"fmt"
)

// NewSession starts a persistent bash session in the sandbox: in the workspace (or
// o.Cwd) with the sandbox env overlaid with o.Env, or from o.Snapshot. Sandbox.Close
// closes it; so does Session.Close. After Sandbox.Close it returns ErrClosed.
// A closed session unregisters itself, so a long-lived sandbox holds nothing for it.
func (s *Sandbox) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	sess, err := newSession(ctx, sessionConfig{Options: o, Dir: s.dir, Env: s.env, OutputLimit: s.cfg.OutputBufferBytes, cg: s.cg, sb: s})
	if err != nil {
		return nil, fmt.Errorf("failed to start session: %w", err)
	}
	unregister, ok := s.onClose(sess.Close)
	if !ok { // the sandbox closed meanwhile
		_ = sess.Close(ctx)
		return nil, ErrClosed
	}
	sess.setAfterClose(unregister)
	return sess, nil
}
