package cluster

import "time"

// notifyHandoffs tells this node, through Config.OnHandoff, of every handoff that
// moves partitions away from it, once per BeginHandoff epoch and target. It reads
// the published table after each change rather than hooking Apply, so handoffs
// found after a restart (replayed log, restored snapshot) are reported too, and a
// handoff already over when the goroutine gets to it is not. It runs on its own
// goroutine, one call at a time; Close waits for it.
func (n *Node) notifyHandoffs() {
	defer n.wg.Done()
	type key struct {
		epoch uint64
		to    NodeID
	}
	told := map[key]bool{}
	var last *Assignment // the table last scanned: states share it until parts change
	for {
		s := n.fsm.cur.Load()
		if len(s.parts) > 0 && &s.parts[0] != last {
			last = &s.parts[0]
			current := map[key]bool{}
			for _, h := range s.handoffsFrom(n.cfg.NodeID) {
				k := key{h.Epoch, h.To}
				current[k] = true
				if told[k] {
					continue
				}
				told[k] = true
				n.cfg.OnHandoff(h)
				if n.ctx.Err() != nil {
					return
				}
			}
			for k := range told {
				if !current[k] {
					delete(told, k)
				}
			}
		}
		n.fsm.waitIndex(n.ctx, s.index+1, time.Hour)
		if n.ctx.Err() != nil {
			return
		}
	}
}
