package actor

import (
	"context"
	"fmt"
)

// Deactivate ends sandbox sb's activation on this node, for a planned ownership move
// (docs/design.md, "Fencing"): its processes are ended (process.exited recorded),
// sessions and terminals are remembered, its state is saved, and the activation is
// dropped. Requests queued behind it fail with ErrUnavailable; later requests activate
// it again from storage. A sandbox that is not active is left alone. (Extension.)
func (n *Node) Deactivate(ctx context.Context, sb string) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	a := n.active(sb)
	if a == nil {
		return nil
	}
	_, err := ask(ctx, a, func(a *sbActor) (struct{}, error) {
		a.ending.Store(true) // before endWork: what it kills did not end by itself
		if a.rec != nil {
			a.rec.Ended = len(a.sb.procs) > 0 // the next owner says processes were lost (moved.go)
			a.endWork(true)
			a.rec.Left = true // the next owner claims no loss of what was not running here (moved.go)
			a.saveRec()
		}
		a.deactivate = true
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	select { // answered after commit; the activation leaves the registry just after
	case <-a.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finishDeactivate drops the activation after the group that asked for it committed.
func (a *sbActor) finishDeactivate() {
	a.stop(fmt.Errorf("%w: sandbox %q was deactivated on this node", ErrUnavailable, a.id))
}
