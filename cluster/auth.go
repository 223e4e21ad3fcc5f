package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MinSecretLen is the shortest cluster secret Open accepts (Config.Secret).
const MinSecretLen = 32

// The node-to-node handshake. Every connection on the raft listener, whatever it
// carries (raft, heartbeats, or any stream routed later), opens with it, before the
// listener looks at the first byte that routes it:
//
//	dialer   → acceptor: authMagic, nonce c (32 bytes)
//	acceptor → dialer:   nonce s (32 bytes), HMAC-SHA256(secret, "acceptor" c s)
//	dialer   → acceptor: HMAC-SHA256(secret, "dialer" c s)
//
// Each side proves it knows the secret over nonces it did not choose, so a recorded
// handshake cannot be replayed, and the two roles sign different labels, so one
// side's proof cannot be reflected back as the other's. MACs are compared in
// constant time. The dialer checks the acceptor too: a node never sends raft traffic
// to a listener that does not know the secret (a stale address taken by someone
// else).
var authMagic = [4]byte{'S', 'G', 'C', '1'}

const (
	nonceLen = 32
	macLen   = sha256.Size
	// handshakeTimeout bounds the inbound handshake: a peer that connects and says
	// nothing is dropped after it.
	handshakeTimeout = 5 * time.Second
	// rejectLogEvery is how often a rejection is logged per source address.
	rejectLogEvery = time.Minute
	// rejectLogSources bounds the per-source log memory; past it old entries go.
	rejectLogSources = 1024
)

// errHandshake is the cause of every failed handshake.
var errHandshake = errors.New("cluster: node handshake failed")

// authenticator runs the handshake with the cluster secret, counts the inbound
// connections it rejected and rate-limits their logs. Safe for concurrent use.
type authenticator struct {
	secret   []byte
	log      *slog.Logger
	rejected atomic.Uint64

	mu     sync.Mutex
	logged map[string]time.Time // source host → last log
}

func newAuthenticator(secret []byte, log *slog.Logger) *authenticator {
	return &authenticator{secret: append([]byte(nil), secret...), log: log, logged: map[string]time.Time{}}
}

func (a *authenticator) mac(label string, c, s []byte) []byte {
	h := hmac.New(sha256.New, a.secret)
	h.Write([]byte(label))
	h.Write(c)
	h.Write(s)
	return h.Sum(nil)
}

// dial runs the dialer's side on a fresh outbound connection, within
// handshakeTimeout whatever the dial's own timeout: unlike a TCP connect, the
// handshake waits for the peer's goroutines, and a heartbeat's L/6 dial timeout would
// fail it on a loaded host and cost the node its lease.
func (a *authenticator) dial(conn net.Conn) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	hello := make([]byte, len(authMagic)+nonceLen)
	copy(hello, authMagic[:])
	c := hello[len(authMagic):]
	if _, err := rand.Read(c); err != nil {
		return err
	}
	if _, err := conn.Write(hello); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	reply := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(conn, reply); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	s, proof := reply[:nonceLen], reply[nonceLen:]
	if !hmac.Equal(proof, a.mac("acceptor", c, s)) {
		return fmt.Errorf("%w: the peer does not know the cluster secret", errHandshake)
	}
	if _, err := conn.Write(a.mac("dialer", c, s)); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	return nil
}

// accept runs the acceptor's side on a fresh inbound connection.
func (a *authenticator) accept(conn net.Conn) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	hello := make([]byte, len(authMagic)+nonceLen)
	if _, err := io.ReadFull(conn, hello); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	if [4]byte(hello[:len(authMagic)]) != authMagic {
		return fmt.Errorf("%w: not a sandgate node (no handshake)", errHandshake)
	}
	c := hello[len(authMagic):]
	reply := make([]byte, nonceLen, nonceLen+macLen)
	if _, err := rand.Read(reply); err != nil {
		return err
	}
	s := reply[:nonceLen]
	reply = append(reply, a.mac("acceptor", c, s)...)
	if _, err := conn.Write(reply); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	proof := make([]byte, macLen)
	if _, err := io.ReadFull(conn, proof); err != nil {
		return fmt.Errorf("%w: %v", errHandshake, err)
	}
	if !hmac.Equal(proof, a.mac("dialer", c, s)) {
		return fmt.Errorf("%w: the peer does not know the cluster secret", errHandshake)
	}
	return nil
}

// reject counts an inbound connection that failed the handshake and logs it, at most
// once a minute per source host.
func (a *authenticator) reject(remote net.Addr, err error) {
	a.rejected.Add(1)
	src := remote.String()
	if host, _, e := net.SplitHostPort(src); e == nil {
		src = host
	}
	now := time.Now()
	a.mu.Lock()
	last, seen := a.logged[src]
	log := !seen || now.Sub(last) >= rejectLogEvery
	if log {
		if len(a.logged) >= rejectLogSources {
			for k, t := range a.logged {
				if now.Sub(t) >= rejectLogEvery {
					delete(a.logged, k)
				}
			}
			if len(a.logged) >= rejectLogSources {
				clear(a.logged)
			}
		}
		a.logged[src] = now
	}
	a.mu.Unlock()
	if log {
		a.log.Warn("cluster: refused a connection on the raft port that failed authentication (further ones from this source are counted, not logged, for a minute)",
			"source", remote.String(), "err", err)
	}
}

// RejectedConns returns how many inbound connections on the raft listener failed the
// node handshake (wrong or no cluster secret) since Open.
func (n *Node) RejectedConns() uint64 { return n.stream.auth.rejected.Load() }
