package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// Heartbeats renew node leases. Every L/6 a node sends one to the raft leader over a
// heartbeat connection on the leader's raft port (see streamLayer), one at a time:
//
//	request:  frame{seq uvarint, node id string}
//	response: frame{seq uvarint, verdict byte, index uvarint}
//
// A frame is a uvarint length and that many bytes. The leader answers granted only
// after a VerifyLeader begun after the request arrived (liveness.go); the node then
// waits until its replica reaches index and sets its lease to the request's send
// time + L. Waiting for the index is what keeps a node that was cut off and came back
// from serving partitions it lost while away: it renews only with a table at least
// as new as the leader's when the leader vouched for it.

// verdict is the leader's answer to a heartbeat.
type verdict byte

const (
	verdictGranted   verdict = 1 // the lease runs to send time + L, once the replica is at index
	verdictNotLeader verdict = 2 // ask the leader (or wait for one)
	verdictRetry     verdict = 3 // a new leader catching up, or this node being failed: next time
	verdictRefused   verdict = 4 // not a member (unknown or removed): no lease
)

// maxFrame bounds a heartbeat frame; a larger length is a protocol error.
const maxFrame = 4096

func writeFrame(w io.Writer, body []byte) error {
	b := binary.AppendUvarint(make([]byte, 0, len(body)+binary.MaxVarintLen64), uint64(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

func readFrame(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxFrame {
		return nil, fmt.Errorf("%w: heartbeat frame of %d bytes", ErrCorrupt, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

type hbRequest struct {
	seq  uint64
	node NodeID
}

type hbResponse struct {
	seq     uint64
	verdict verdict
	index   uint64
}

func (q hbRequest) encode() []byte {
	e := encoder{}
	e.uvarint(q.seq)
	e.string(string(q.node))
	return e.b
}

func decodeRequest(b []byte) (hbRequest, error) {
	d := decoder{b: b}
	q := hbRequest{seq: d.uvarint(), node: NodeID(d.string())}
	return q, d.done()
}

func (r hbResponse) encode() []byte {
	e := encoder{}
	e.uvarint(r.seq)
	e.byte(byte(r.verdict))
	e.uvarint(r.index)
	return e.b
}

func decodeResponse(b []byte) (hbResponse, error) {
	d := decoder{b: b}
	r := hbResponse{seq: d.uvarint(), verdict: verdict(d.byte()), index: d.uvarint()}
	return r, d.done()
}

// serveHeartbeats answers the heartbeats of one connection until it fails or the
// node closes. It runs on the stream layer's goroutine for the connection.
func (n *Node) serveHeartbeats(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		b, err := readFrame(r)
		if err != nil {
			return
		}
		arrival := n.now()
		q, err := decodeRequest(b)
		if err != nil {
			n.log.Warn("cluster: failed to decode heartbeat", "err", err)
			return
		}
		v, index := n.grant(q.node, arrival)
		if v == 0 {
			return // closing
		}
		_ = c.SetWriteDeadline(time.Now().Add(n.cfg.LeaseTTL))
		if err := writeFrame(c, hbResponse{seq: q.seq, verdict: v, index: index}.encode()); err != nil {
			return
		}
	}
}

// heartbeat is the node's renewal loop: every L/6 one heartbeat to the leader, on a
// connection kept while the leader stays the same.
func (n *Node) heartbeat() {
	defer n.wg.Done()
	every := n.cfg.LeaseTTL / 6
	t := time.NewTicker(every)
	defer t.Stop()
	var c *hbConn
	defer func() { c.close() }()
	var seq uint64
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if n.hbPaused.Load() {
			continue
		}
		addr, lid := n.raft.LeaderWithID()
		if addr == "" || NodeID(lid) == n.cfg.NodeID {
			// A leader renews its own lease through the log (leaderlease.go).
			c.close()
			c = nil
			continue
		}
		if c != nil && c.addr != string(addr) {
			c.close()
			c = nil
		}
		if c == nil {
			conn, err := n.stream.dialHeartbeat(string(addr), every)
			if err != nil {
				continue
			}
			c = &hbConn{addr: string(addr), c: conn, r: bufio.NewReader(conn)}
		}
		seq++
		send := n.now()
		resp, err := c.roundTrip(hbRequest{seq: seq, node: n.cfg.NodeID}, n.cfg.LeaseTTL/2)
		if err != nil {
			n.log.Debug("cluster: heartbeat failed", "leader", addr, "err", err)
			c.close()
			c = nil
			continue
		}
		if resp.verdict != verdictGranted {
			n.log.Debug("cluster: heartbeat not granted", "leader", addr, "verdict", int(resp.verdict))
			if resp.verdict == verdictNotLeader {
				c.close()
				c = nil
			}
			continue
		}
		until := send + n.cfg.LeaseTTL
		if !n.fsm.waitIndex(n.ctx, resp.index, until-n.now()) {
			n.log.Debug("cluster: replica behind the grant's index until the lease it offered ended", "index", resp.index)
			continue
		}
		if valid, _ := n.Lease(); !valid && !n.caughtUp(until) {
			continue
		}
		if !n.hbPaused.Load() {
			n.lease.extend(until)
		}
	}
}

// hbConn is the client end of a heartbeat connection.
type hbConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
}

func (h *hbConn) close() {
	if h != nil {
		h.c.Close()
	}
}

func (h *hbConn) roundTrip(q hbRequest, timeout time.Duration) (hbResponse, error) {
	_ = h.c.SetDeadline(time.Now().Add(timeout))
	if err := writeFrame(h.c, q.encode()); err != nil {
		return hbResponse{}, err
	}
	b, err := readFrame(h.r)
	if err != nil {
		return hbResponse{}, err
	}
	resp, err := decodeResponse(b)
	if err != nil {
		return hbResponse{}, err
	}
	if resp.seq != q.seq {
		return hbResponse{}, fmt.Errorf("%w: heartbeat answer %d to request %d", ErrCorrupt, resp.seq, q.seq)
	}
	return resp, nil
}

// caughtUp brings this replica up to every write committed so far before a lease
// starts (at start, or after one lapsed), within the lease it is offered: the grant's
// index covers the tables only, and the data that this node's sandboxes wrote since
// the last table change (its own writes before a restart, replayed from the log) may
// not be in its replica yet. An owner reads its own sandboxes from its replica, and
// one that served before catching up would answer from the past: a take of messages
// found none that a post had queued before the restart.
func (n *Node) caughtUp(until time.Duration) bool {
	ctx, cancel := context.WithTimeout(n.ctx, until-n.now())
	defer cancel()
	if err := n.sync(ctx); err != nil {
		n.log.Debug("cluster: replica not caught up before the lease it was offered ended", "err", err)
		return false
	}
	return true
}
