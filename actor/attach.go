package actor

import (
	"context"
	"sync"
)

// Attach records a connected client (WebSocket, SSE) on the sandbox: while any client
// is attached the sandbox neither hibernates on idle TTL nor passivates. Call release
// exactly once when the client leaves (extra calls are no-ops); release does not block.
func (n *Node) Attach(ctx context.Context, sb string) (release func(), err error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	_, err = call(ctx, n, sb, func(a *sbActor) (struct{}, error) {
		if err := a.exists(); err != nil {
			return struct{}{}, err
		}
		a.attached++
		a.touch()
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			n.post(sb, func(a *sbActor) (any, error) {
				if a.attached > 0 {
					a.attached--
				}
				a.touch()
				return nil, nil
			})
		})
	}, nil
}

// Attached returns how many clients are attached to the sandbox (see Attach): a
// client whose stream was dropped no longer counts.
func (n *Node) Attached(ctx context.Context, sb string) (int, error) {
	if err := checkID("sandbox", sb); err != nil {
		return 0, err
	}
	return call(ctx, n, sb, func(a *sbActor) (int, error) {
		if err := a.exists(); err != nil {
			return 0, err
		}
		return a.attached, nil
	})
}
