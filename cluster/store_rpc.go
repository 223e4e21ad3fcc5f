package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Batch RPCs carry a follower's groups to the leader over the cluster's TCP listener
// (a connection opened with streamBatch, see streamLayer), one request at a time per
// connection:
//
//	request:  frame{seq uvarint, entry (a cmdBatches command)}
//	response: frame{seq uvarint, status byte, index uvarint, verdicts, message string}
//
// The leader applies the entry as it came (the follower already grouped it) and
// answers with its index and verdicts. A follower keeps up to maxIdleRPC idle
// connections to the current leader; groups in flight at once use one each.

// rpcStatus is the leader's answer to a batch RPC.
type rpcStatus byte

const (
	rpcOK            rpcStatus = 1
	rpcNotLeader     rpcStatus = 2 // not applied: retry at the leader
	rpcIndeterminate rpcStatus = 3 // enqueued, then leadership or the node was lost
	rpcBad           rpcStatus = 4 // not a cmdBatches entry: not applied
)

const (
	// maxBatchFrame bounds a batch RPC frame; a group is at most about
	// maxGroupBytes plus its framing.
	maxBatchFrame = 2*maxGroupBytes + 1<<20
	// rpcTimeout bounds one batch RPC: dial, send, the leader's commit and the answer.
	rpcTimeout = applyTimeout + 5*time.Second
	maxIdleRPC = maxInFlight
)

func readFrameMax(r *bufio.Reader, limit uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: frame of %d bytes", ErrCorrupt, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// rpcConn is the client end of a batch connection.
type rpcConn struct {
	c   net.Conn
	r   *bufio.Reader
	seq uint64
}

// rpcPool holds idle batch connections to one leader address; a connection is used
// by one call at a time, taken out of the pool for it. Safe for concurrent use.
type rpcPool struct {
	mu   sync.Mutex
	addr string
	idle []*rpcConn
}

func (p *rpcPool) get(addr string) *rpcConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addr != addr {
		for _, c := range p.idle {
			c.c.Close()
		}
		p.idle, p.addr = nil, addr
	}
	if k := len(p.idle); k > 0 {
		c := p.idle[k-1]
		p.idle = p.idle[:k-1]
		return c
	}
	return nil
}

func (p *rpcPool) put(addr string, c *rpcConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addr != addr || len(p.idle) >= maxIdleRPC {
		c.c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// commitRemote sends data to the leader at addr. A failure to connect applied
// nothing; a failure after the request was sent leaves the outcome unknown.
func (n *Node) commitRemote(addr string, data []byte) (res commitResult, definite bool, err error) {
	c := n.rpcs.get(addr)
	if c == nil {
		conn, err := n.stream.dialStream(addr, streamBatch, rpcTimeout)
		if err != nil {
			return res, true, fmt.Errorf("failed to reach the leader %s: %w (%w)", addr, n.notLeader(), err)
		}
		c = &rpcConn{c: conn, r: bufio.NewReader(conn)}
	}
	stop := context.AfterFunc(n.ctx, func() { c.c.Close() })
	defer stop()
	c.seq++
	_ = c.c.SetDeadline(time.Now().Add(rpcTimeout))
	e := encoder{b: make([]byte, 0, len(data)+binary.MaxVarintLen64)}
	e.uvarint(c.seq)
	e.b = append(e.b, data...)
	if err := writeFrame(c.c, e.b); err != nil {
		c.c.Close()
		return res, false, fmt.Errorf("%w: failed to send to the leader %s: %v", ErrIndeterminate, addr, err)
	}
	b, err := readFrameMax(c.r, maxBatchFrame)
	if err != nil {
		c.c.Close()
		return res, false, fmt.Errorf("%w: failed to hear from the leader %s: %v", ErrIndeterminate, addr, err)
	}
	d := decoder{b: b}
	seq, st, index, vs, msg := d.uvarint(), rpcStatus(d.byte()), d.uvarint(), d.verdicts(), d.string()
	if err := d.done(); err != nil || seq != c.seq {
		c.c.Close()
		return res, false, fmt.Errorf("%w: bad answer from the leader %s (seq %d for %d, %v)", ErrIndeterminate, addr, seq, c.seq, err)
	}
	_ = c.c.SetDeadline(time.Time{})
	n.rpcs.put(addr, c)
	switch st {
	case rpcOK:
		return commitResult{index: index, verdicts: vs}, false, nil
	case rpcNotLeader:
		return res, true, fmt.Errorf("%w (%s)", n.notLeader(), msg)
	case rpcBad:
		return res, false, fmt.Errorf("%w: the leader refused the entry: %s", ErrCorrupt, msg)
	}
	return res, false, fmt.Errorf("%w: %s", ErrIndeterminate, msg)
}

// serveBatches answers the batch RPCs of one connection until it fails or the node
// closes. It runs on the stream layer's goroutine for the connection.
func (n *Node) serveBatches(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		b, err := readFrameMax(r, maxBatchFrame)
		if err != nil {
			return
		}
		d := decoder{b: b}
		seq := d.uvarint()
		if d.err != nil {
			return
		}
		st, res, msg := n.serveGroup(d.b)
		e := encoder{b: make([]byte, 0, 32+2*len(res.verdicts))}
		e.uvarint(seq)
		e.byte(byte(st))
		e.uvarint(res.index)
		e.verdicts(res.verdicts)
		e.string(msg)
		_ = c.SetWriteDeadline(time.Now().Add(rpcTimeout))
		if err := writeFrame(c, e.b); err != nil {
			return
		}
	}
}

// serveGroup commits one group for a follower, if this node leads.
func (n *Node) serveGroup(data []byte) (rpcStatus, commitResult, string) {
	if len(data) == 0 || !isBatches(cmdType(data[0])) {
		return rpcBad, commitResult{}, "not a batch entry"
	}
	if n.ctx.Err() != nil {
		return rpcNotLeader, commitResult{}, "closing"
	}
	res, definite, err := n.commitLocal(data)
	switch {
	case err == nil:
		return rpcOK, res, ""
	case definite:
		return rpcNotLeader, res, err.Error()
	}
	return rpcIndeterminate, res, strings.TrimPrefix(err.Error(), ErrIndeterminate.Error()+": ")
}
