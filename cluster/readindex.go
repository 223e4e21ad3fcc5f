package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Read indexes: how a replica learns what "caught up" means without writing. A node
// asks the leader over a connection of its own to the leader's raft port
// (authenticated like every connection there, see Node authentication), opened
// with streamReadIndex, one request at a time per connection:
//
//	request:  frame{seq uvarint}
//	response: frame{seq uvarint, status byte, index uvarint}
//
// The leader answers readOK with an index only when it can vouch for it (raft's
// read-index rule, docs/design.md "Catching up without a write"):
//
//  1. it has committed an entry of its current term: its liveness record is ready
//     for that term, which it becomes only after the term's Barrier and first lease
//     entry applied (a new leader's commit index may lag what earlier leaders
//     committed until then);
//  2. a VerifyLeader round begun after the request arrived confirms that a quorum
//     still follows it, and the term has not changed meanwhile;
//  3. it reads its commit index after that round, and walks back from it to the
//     last entry raft hands to the FSM (a command or a configuration; raft's no-op
//     and barrier entries never reach an FSM, so a replica could not tell it
//     applied them).
//
// Anything else is readNotReady or readNotLeader, and the asking node falls back
// to CatchUp's empty write. A leader of an older version hands the connection to
// raft, which drops it: the asking node falls back the same way.

// streamReadIndex opens a read index connection (see streamLayer).
const streamReadIndex byte = 0xf4

// readStatus is the leader's answer to a read index request.
type readStatus byte

const (
	readOK        readStatus = 1
	readNotLeader readStatus = 2
	readNotReady  readStatus = 3 // no entry of this term committed yet, or no index to give
)

// maxIndexWalk bounds the walk back from the commit index to an entry the FSM sees.
// Past the first entries of a term (a no-op, a barrier) every entry is a command.
const maxIndexWalk = 16

// readyIn reports whether this leadership reached its barrier in term.
func (l *liveness) readyIn(term uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready && l.term == term
}

// leaderReadIndex is the leader's side: see the rules above. It blocks for one
// VerifyLeader round (shared with the heartbeats waiting then).
func (n *Node) leaderReadIndex() (readStatus, uint64) {
	if n.ctx.Err() != nil || !n.IsLeader() {
		return readNotLeader, 0
	}
	term := n.raft.CurrentTerm()
	if !n.live.readyIn(term) {
		return readNotReady, 0
	}
	if !n.verifyLeader() {
		return readNotLeader, 0
	}
	commit := n.raft.CommitIndex()
	if n.raft.CurrentTerm() != term {
		return readNotReady, 0
	}
	i, ok := n.lastApplied(commit)
	if !ok {
		return readNotReady, 0
	}
	return readOK, i
}

// lastApplied returns the index of the last entry at or below i that raft hands
// to the FSM, reading this node's log.
func (n *Node) lastApplied(i uint64) (uint64, bool) {
	var l raft.Log
	for k := 0; k < maxIndexWalk && i > 0; k, i = k+1, i-1 {
		if err := n.store.GetLog(i, &l); err != nil {
			return 0, false
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return i, true
		}
	}
	return 0, false
}

// serveReadIndex answers the read index requests of one connection until it fails
// or the node closes. It runs on the stream layer's goroutine for the connection.
func (n *Node) serveReadIndex(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		b, err := readFrame(r)
		if err != nil {
			return
		}
		d := decoder{b: b}
		seq := d.uvarint()
		if d.done() != nil {
			return
		}
		st, index := n.leaderReadIndex()
		e := encoder{}
		e.uvarint(seq)
		e.byte(byte(st))
		e.uvarint(index)
		_ = c.SetWriteDeadline(time.Now().Add(n.cfg.LeaseTTL))
		if err := writeFrame(c, e.b); err != nil {
			return
		}
	}
}

// readIndex returns an index that covers every entry committed before the call,
// from this node when it leads or from the leader, and whether it got one.
func (n *Node) readIndex(ctx context.Context) (uint64, bool) {
	if n.IsLeader() {
		st, i := n.leaderReadIndex()
		return i, st == readOK
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return 0, false
	}
	st, i, err := n.askReadIndex(ctx, string(addr))
	if err != nil {
		n.log.Debug("cluster: failed to ask the leader for a read index", "leader", addr, "err", err)
		return 0, false
	}
	return i, st == readOK
}

// askReadIndex sends one read index request to the leader at addr, on a pooled
// connection, within ctx and at most L plus a second (the leader's verification
// round takes at most L).
func (n *Node) askReadIndex(ctx context.Context, addr string) (readStatus, uint64, error) {
	limit := n.cfg.LeaseTTL + time.Second
	deadline := time.Now().Add(limit)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	c := n.reads.get(addr)
	if c == nil {
		conn, err := n.stream.dialStream(addr, streamReadIndex, min(time.Until(deadline), limit))
		if err != nil {
			return 0, 0, err
		}
		c = &rpcConn{c: conn, r: bufio.NewReader(conn)}
	}
	stop := context.AfterFunc(ctx, func() { c.c.Close() })
	defer stop()
	c.seq++
	_ = c.c.SetDeadline(deadline)
	e := encoder{}
	e.uvarint(c.seq)
	if err := writeFrame(c.c, e.b); err != nil {
		c.c.Close()
		return 0, 0, err
	}
	b, err := readFrame(c.r)
	if err != nil {
		c.c.Close()
		return 0, 0, err
	}
	d := decoder{b: b}
	seq, st, index := d.uvarint(), readStatus(d.byte()), d.uvarint()
	if err := d.done(); err != nil || seq != c.seq {
		c.c.Close()
		return 0, 0, fmt.Errorf("%w: bad read index answer (seq %d for %d, %v)", ErrCorrupt, seq, c.seq, err)
	}
	_ = c.c.SetDeadline(time.Time{})
	if !stop() { // ctx ended as the answer came: the connection is closed
		return st, index, nil
	}
	n.reads.put(addr, c)
	return st, index, nil
}
