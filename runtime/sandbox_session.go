package runtime

import (
	"context"
	"fmt"
)

// NewSession starts a persistent shell session in the sandbox's workspace, with the
// sandbox's environment overlaid by o.Env (or o.Snapshot, when set). The session is
// closed by Sandbox.Close; close it yourself when done with it.
//
// Added by the actor helper as a thin wrapper over newSession (rt-sess owns sessions).
// Caveat: the Sandbox keeps its close hook until Sandbox.Close, also for sessions
// closed earlier.
func (s *Sandbox) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	sess, err := newSession(ctx, sessionConfig{Options: o, Dir: s.dir, Env: s.env, OutputLimit: s.cfg.OutputBufferBytes})
	if err != nil {
		return nil, fmt.Errorf("failed to start session: %w", err)
	}
	if _, ok := s.onClose(sess.Close); !ok {
		_ = sess.Close(ctx)
		return nil, ErrClosed
	}
	return sess, nil
}
