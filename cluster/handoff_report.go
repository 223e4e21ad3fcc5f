package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The old owner's side of a handoff: it learns of the handoff from its own table,
// stops the partitions' sandboxes through Config.OnHandoff, and reports to the
// leader, which then completes the handoff at once. The report travels on its own
// connection to the leader's raft port, authenticated by the node handshake like
// every connection there (auth.go), then opened with streamHandoff:
//
//	request:  frame{from, to string, epoch uvarint, count uvarint, partitions uvarint...,
//	                [count uvarint, sandboxes string...]}
//	response: frame{verdict byte}
//
// The sandboxes (pins moving) come last and only when there are some, so a report
// of partitions reads the same to a leader that predates pin handoffs.
//
// A leader of an older version hands such a connection to raft, which drops it:
// the report fails and the leader completes the handoff after L + δ instead.

// streamHandoff opens a handoff report connection (see streamLayer).
const streamHandoff byte = 0xf3

// maxReport bounds a report frame: two node ids and up to every partition.
const maxReport = 64 << 10

// Report verdicts.
const (
	reportDone      byte = 1 // the handoff is over (completed now or before)
	reportNotLeader byte = 2
	reportFailed    byte = 3 // try again
)

func encodeReport(h Handoff) []byte {
	e := encoder{b: make([]byte, 0, 32+len(h.Partitions)*2)}
	e.string(string(h.From))
	e.string(string(h.To))
	e.uvarint(h.Epoch)
	e.uvarint(uint64(len(h.Partitions)))
	for _, p := range h.Partitions {
		e.uvarint(uint64(p))
	}
	if len(h.Sandboxes) > 0 {
		e.uvarint(uint64(len(h.Sandboxes)))
		for _, sb := range h.Sandboxes {
			e.string(sb)
		}
	}
	return e.b
}

func decodeReport(b []byte) (Handoff, error) {
	d := decoder{b: b}
	h := Handoff{From: NodeID(d.string()), To: NodeID(d.string()), Epoch: d.uvarint()}
	n := d.count()
	h.Partitions = make([]int, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		p := d.uvarint()
		if p >= Partitions {
			return Handoff{}, fmt.Errorf("%w: partition %d in a handoff report", ErrCorrupt, p)
		}
		h.Partitions = append(h.Partitions, int(p))
	}
	if d.err == nil && len(d.b) > 0 {
		n := d.count()
		if n == 0 && d.err == nil {
			return Handoff{}, fmt.Errorf("%w: empty sandbox list in a handoff report", ErrCorrupt)
		}
		for i := 0; i < n && d.err == nil; i++ {
			h.Sandboxes = append(h.Sandboxes, d.string())
		}
	}
	return h, d.done()
}

// readReport reads one length-prefixed frame of at most maxReport bytes.
func readReport(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxReport {
		return nil, fmt.Errorf("%w: handoff report of %d bytes", ErrCorrupt, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// serveHandoffReport answers the one report of connection c; it runs on the stream
// layer's goroutine for the connection.
func (n *Node) serveHandoffReport(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(n.cfg.LeaseTTL))
	b, err := readReport(bufio.NewReader(c))
	if err != nil {
		return
	}
	h, err := decodeReport(b)
	if err != nil {
		n.log.Warn("cluster: failed to decode a handoff report", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL)
	defer cancel()
	v := reportDone
	if _, err := n.completeHandoff(ctx, h); err != nil {
		v = reportFailed
		if errors.Is(err, ErrNotLeader) {
			v = reportNotLeader
		}
		n.log.Debug("cluster: failed to complete a reported handoff", "from", h.From, "epoch", h.Epoch, "err", err)
	}
	_ = writeFrame(c, []byte{v})
}

// report tells the leader once that h is done here, and reports whether it took it.
func (n *Node) report(h Handoff) bool {
	if n.IsLeader() {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL)
		defer cancel()
		_, err := n.completeHandoff(ctx, h)
		return err == nil
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return false
	}
	c, err := n.stream.dialStream(string(addr), streamHandoff, n.cfg.LeaseTTL/2)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(n.cfg.LeaseTTL))
	if err := writeFrame(c, encodeReport(h)); err != nil {
		return false
	}
	b, err := readFrame(bufio.NewReader(c))
	return err == nil && len(b) == 1 && b[0] == reportDone
}

// handingOff reports whether any partition of h is still in that handoff from this
// node in the local table.
func (n *Node) handingOff(h Handoff) bool {
	s := n.fsm.cur.Load()
	for _, p := range h.Partitions {
		if a := s.parts[p]; a.State == PartitionHandoff && a.Epoch == h.Epoch && a.Owner == n.cfg.NodeID {
			return true
		}
	}
	for _, sb := range h.Sandboxes {
		if p, ok := s.pins[sb]; ok && p.State == PartitionHandoff && p.Epoch == h.Epoch && p.Owner == n.cfg.NodeID {
			return true
		}
	}
	return false
}

// notifyHandoffs handles every handoff that moves partitions away from this node,
// once per BeginHandoff epoch and target: it calls Config.OnHandoff, then reports to
// the leader until the leader takes the report or the handoff is over. It reads the
// published table after each change rather than hooking Apply, so handoffs found
// after a restart (replayed log, restored snapshot) are handled too, and one already
// over when the goroutine gets to it is not. It runs on its own goroutine, one
// handoff at a time, and only while the node holds a lease; Close waits for it.
func (n *Node) notifyHandoffs() {
	defer n.wg.Done()
	type key struct {
		epoch uint64
		to    NodeID
	}
	told := map[key]bool{}
	var last *state // the table last scanned
	for {
		s := n.fsm.cur.Load()
		if ok, _ := n.Lease(); !ok {
			// Without a lease the table may be an old one being replayed (a node
			// just opened, or back from a cut), whose handoffs are long over. A
			// lease comes only with a table as new as the leader's when it granted.
			n.fsm.waitIndex(n.ctx, s.index+1, n.cfg.LeaseTTL/6)
			if n.ctx.Err() != nil {
				return
			}
			continue
		}
		if s != last {
			last = s
			current := map[key]bool{}
			for _, h := range s.handoffsFrom(n.cfg.NodeID) {
				k := key{h.Epoch, h.To}
				current[k] = true
				if !told[k] {
					told[k] = true
					n.handOff(h)
				}
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

// handOff runs the hook for h, then reports it, again every L/6 (or at the next
// change of the table) while the handoff lasts.
func (n *Node) handOff(h Handoff) {
	if !n.handingOff(h) {
		return // over already (the table moved on while an earlier hook ran)
	}
	if n.cfg.OnHandoff != nil {
		n.cfg.OnHandoff(n.ctx, h)
	}
	for n.ctx.Err() == nil && n.handingOff(h) {
		if n.report(h) {
			return
		}
		n.fsm.waitIndex(n.ctx, n.fsm.cur.Load().index+1, n.cfg.LeaseTTL/6)
	}
}
