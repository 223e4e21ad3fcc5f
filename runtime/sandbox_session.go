package runtime

import (
	"context"
	"fmt"
)

// NewSession starts a persistent shell session in the sandbox's workspace, with the
// sandbox's environment overlaid by o.Env (or o.Snapshot, when set). Sandbox.Close
// closes every session still open; close a session yourself when done with it.
func (s *Sandbox) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	sess, err := newSession(ctx, sessionConfig{Options: o, Dir: s.dir, Env: s.env, OutputLimit: s.cfg.OutputBufferBytes})
	if err != nil {
		return nil, fmt.Errorf("failed to start session: %w", err)
	}
	unregister, ok := s.onClose(sess.Close)
	if !ok {
		_ = sess.Close(ctx)
		return nil, ErrClosed
	}
	sess.setAfterClose(unregister)
	return sess, nil
}
