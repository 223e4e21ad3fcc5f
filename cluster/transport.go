package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer plus ownership of every connection it
// made or accepted. raft's NetworkTransport.Close stops its listener but leaves
// accepted connections to be closed by their peers (their handlers block in Read) and
// pooled outbound ones open, so a closed node would keep goroutines and sockets alive
// as long as its peers do. Close here ends them all.
type streamLayer struct {
	ln net.Listener

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func listen(addr string) (*streamLayer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("%w: raft address %s is not one peers can reach; listen on a specific host", ErrInvalid, ln.Addr())
	}
	return &streamLayer{ln: ln, conns: map[*trackedConn]struct{}{}}, nil
}

func (s *streamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// Accept waits for the next inbound connection.
func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Dial connects to a peer.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Addr is the listening address, advertised to peers.
func (s *streamLayer) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening and closes every connection; it is idempotent.
func (s *streamLayer) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
	if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
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
