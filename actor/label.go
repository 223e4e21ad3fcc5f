package actor

import (
	"context"
	"errors"

	"github.com/sandgate/sandgate/runtime"
)

// SetProcessLabel sets the label of process id (its name in lists) and returns the
// process as the API shows it. A running process's saved running record gets the new
// label in the same turn, and so does the saved record of an exited one, so the label
// outlives hibernation, passivation and a node restart as the record does. It is
// ErrNotFound for an unknown process, as for the sandbox's other process turns.
func (n *Node) SetProcessLabel(ctx context.Context, sb, id, label string) (runtime.ProcessInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.ProcessInfo{}, err
	}
	return call(ctx, n, sb, func(a *sbActor) (runtime.ProcessInfo, error) {
		if err := a.exists(); err != nil {
			return runtime.ProcessInfo{}, err
		}
		p, err := a.process(id)
		if errors.Is(err, ErrNotFound) {
			a.pruneExited()
			r := a.sb.exited[id]
			if r == nil {
				return runtime.ProcessInfo{}, err
			}
			r.Label = label
			a.write().Put(idKey(pfxExited, id), mustJSON(r))
			a.touch()
			return r.info(), nil
		}
		if err != nil {
			return runtime.ProcessInfo{}, err
		}
		p.SetLabel(label)
		// At most one of the two is there: the key holds the running record until the
		// exit turn overwrites it with the exited one.
		for _, r := range []*exitedRec{a.sb.running[id], a.sb.exited[id]} {
			if r != nil {
				r.Label = label
				a.write().Put(idKey(pfxExited, id), mustJSON(r))
			}
		}
		a.touch()
		return a.procInfo(p), nil
	})
}
