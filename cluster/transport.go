package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is the node's one TCP listener, shared by raft and by the lease
// heartbeats, plus ownership of every connection it made or accepted.
//
// Authentication: every connection, inbound or outbound, first runs the node
// handshake (auth.go), before anything routes or reads it; one that fails is closed.
//
// Multiplexing: after the handshake, the first byte of every inbound connection says what it carries.
// raft's network transport opens each connection with an RPC type byte (0 to 4);
// heartbeat connections open with streamHeartbeat, batch RPCs (store_rpc.go) with
// streamBatch, handoff reports (handoff_report.go) with streamHandoff and read
// indexes (readindex.go) with streamReadIndex, which raft never sends. An accept
// loop reads that byte on a goroutine per connection and hands raft's connections
// (the byte put back) to raft's Accept, the others to their server.
//
// Ownership: raft's NetworkTransport.Close stops its listener but leaves accepted
// connections to be closed by their peers (their handlers block in Read) and pooled
// outbound ones open, so a closed node would keep goroutines and sockets alive as
// long as its peers do. Close here ends them all, and waits for its goroutines and
// for raft's handlers of the connections it accepted (prefixConn.Close).
type streamLayer struct {
	ln    net.Listener
	adv   advertisedAddr // what peers dial: Addr, and so raft's LocalAddr
	raftC chan net.Conn
	done  chan struct{}
	wg    sync.WaitGroup
	up    func() bool            // nil: always up (tests cut the network with it)
	to    func(addr string) bool // nil: every peer; tests block one direction with it
	auth  *authenticator

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

// streamHeartbeat opens a heartbeat connection, streamBatch a batch RPC one
// (streamHandoff, 0xf3, a handoff report: handoff_report.go). raft's first bytes are
// its RPC types, 0 to 4.
const (
	streamHeartbeat byte = 0xf1
	streamBatch     byte = 0xf2
)

// sniffTimeout bounds how long an inbound connection may stay silent before it says
// what it carries.
const sniffTimeout = 10 * time.Second

var _ raft.StreamLayer = (*streamLayer)(nil)

// listen binds addr and advertises advertise (AdvertiseAddr's rules, against the
// bound address so that a port of 0 becomes the real one).
func listen(addr, advertise string, up func() bool, auth *authenticator) (*streamLayer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	adv, err := AdvertiseAddr(ln.Addr().String(), advertise)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("failed to choose the raft advertise address: %w", err)
	}
	return &streamLayer{
		ln: ln, adv: advertisedAddr(adv), raftC: make(chan net.Conn), done: make(chan struct{}), up: up, auth: auth,
		conns: map[*trackedConn]struct{}{},
	}, nil
}

// serve starts the accept loop; a connection whose first byte is a key of routes goes
// to that handler, which owns it and runs on the connection's goroutine.
func (s *streamLayer) serve(routes map[byte]func(net.Conn)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				select {
				case <-s.done:
					return
				default:
				}
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(10 * time.Millisecond) // a transient accept error (EMFILE)
				continue
			}
			tc, err := s.track(c)
			if err != nil {
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.route(tc, routes)
			}()
		}
	}()
}

// route authenticates an inbound connection, reads its first byte and hands it on.
func (s *streamLayer) route(c net.Conn, routes map[byte]func(net.Conn)) {
	if err := s.auth.accept(c); err != nil {
		s.auth.reject(c.RemoteAddr(), err)
		c.Close()
		return
	}
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if h, ok := routes[b[0]]; ok {
		h(c)
		return
	}
	// raft's handler owns the connection from here; Close waits until it closes it.
	s.wg.Add(1)
	select {
	case s.raftC <- &prefixConn{Conn: c, first: b[0], pending: true, handled: s.wg.Done}:
	case <-s.done:
		s.wg.Done()
		c.Close()
	}
}

func (s *streamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (s.up != nil && !s.up()) {
		c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// Accept waits for the next inbound raft connection.
func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.raftC:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Dial connects to a peer's raft listener and runs the node handshake.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.to != nil && !s.to(string(addr)) {
		return nil, fmt.Errorf("%w: dial to %s blocked", net.ErrClosed, addr)
	}
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	tc, err := s.track(c)
	if err != nil {
		return nil, err
	}
	if err := s.auth.dial(tc); err != nil {
		tc.Close()
		return nil, fmt.Errorf("failed to authenticate to %s: %w", addr, err)
	}
	return tc, nil
}

// dialHeartbeat connects to a peer's heartbeat server.
func (s *streamLayer) dialHeartbeat(addr string, timeout time.Duration) (net.Conn, error) {
	return s.dialStream(addr, streamHeartbeat, timeout)
}

// dialStream connects to the peer's server for first (streamHeartbeat, streamBatch,
// streamHandoff).
func (s *streamLayer) dialStream(addr string, first byte, timeout time.Duration) (net.Conn, error) {
	c, err := s.Dial(raft.ServerAddress(addr), timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{first}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Addr is the address advertised to peers (Config.RaftAdvertise), which raft
// records as this server's address; the listener may be bound to another.
func (s *streamLayer) Addr() net.Addr { return s.adv }

// cut closes every connection, inbound and outbound; while the up hook says the
// network is down no new one is made or kept. Tests use it to isolate a node.
func (s *streamLayer) cut() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// Close stops listening, closes every connection and waits for the accept loop, the
// heartbeat handlers and raft's connection handlers; it is idempotent.
func (s *streamLayer) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if first {
		close(s.done)
	}
	err := s.ln.Close()
	s.cut()
	s.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

type trackedConn struct {
	net.Conn
	s    *streamLayer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// prefixConn gives back the byte the router read before raft sees the connection,
// and tells the stream layer when raft's handler is done with it.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool   // read by raft's handler goroutine only
	handled func() // called once, by the first Close
	once    sync.Once
}

// Close closes the connection. raft's handler closes it as it returns (at the
// latest once the stream layer's Close has closed the connection under it), so
// the stream layer's Close, which waits for that, returns only once no handler
// can still act on an RPC it read: a heartbeat read just before raft's shutdown
// would otherwise go on to write the term to a stable store already closed (raft
// panics on that error), or to a data directory already removed.
func (c *prefixConn) Close() error {
	c.once.Do(c.handled)
	return c.Conn.Close()
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		c.pending = false
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}
