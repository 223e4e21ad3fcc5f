package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

const (
	// ticketTTL is how long a connect ticket may wait to be used.
	ticketTTL = time.Minute
	// maxTickets bounds the tickets a node keeps: unused ones expire within ticketTTL,
	// so a client making more than this many a minute is refused (429).
	maxTickets = 4096
)

// ticketStore keeps the OpenCode connect tickets issued by this node: a ticket lets a
// client that cannot set headers (a browser's WebSocket) open one pty's connect
// stream once, within ticketTTL, as the tenant that asked for it. It lives on the
// node that owns the sandbox, where both the connect-token request and the connect
// handshake are served (forwarded there like every sandbox route); a ticket does not
// survive a restart of the node or a move of the sandbox: the client asks for a new
// one. Tickets are kept by their SHA-256, so the store holds none in clear. Safe for
// concurrent use.
type ticketStore struct {
	mu  sync.Mutex
	now func() time.Time // time.Now; tests move it
	by  map[[32]byte]ticket
}

// ticket is what a ticket stands for.
type ticket struct {
	who     Principal
	sandbox string
	pty     string
	expires time.Time
}

func newTicketStore() *ticketStore {
	return &ticketStore{now: time.Now, by: map[[32]byte]ticket{}}
}

// issue makes a ticket for pty of sandbox sb, usable once by who within ticketTTL.
func (st *ticketStore) issue(who Principal, sb, pty string) (string, error) {
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	text := base64.RawURLEncoding.EncodeToString(raw[:])
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	if len(st.by) >= maxTickets {
		for k, t := range st.by {
			if !now.Before(t.expires) {
				delete(st.by, k)
			}
		}
		if len(st.by) >= maxTickets {
			return "", errorf(http.StatusTooManyRequests, codeBudgetExceeded,
				"too many unused connect tickets on this node (at most %d, each valid for %v)", maxTickets, ticketTTL).retry(time.Second)
		}
	}
	st.by[sha256.Sum256([]byte(text))] = ticket{who: who, sandbox: sb, pty: pty, expires: now.Add(ticketTTL)}
	return text, nil
}

// use takes ticket text out of the store, whatever comes next: a ticket is tried
// once. It returns who the ticket speaks for if it is unexpired and was issued for
// pty of sandbox sb.
func (st *ticketStore) use(text, sb, pty string) (Principal, bool) {
	key := sha256.Sum256([]byte(text))
	st.mu.Lock()
	t, ok := st.by[key]
	delete(st.by, key)
	now := st.now()
	st.mu.Unlock()
	if !ok || !now.Before(t.expires) || t.sandbox != sb || t.pty != pty {
		return Principal{}, false
	}
	return t.who, true
}

// requestTicket returns the connect ticket of a request on a ticket route that has no
// token of its own (a token, right or wrong, is what the request is judged by), or "".
func requestTicket(r *http.Request, rt route) string {
	if !rt.ticket || r.Header.Get("Authorization") != "" {
		return ""
	}
	q := r.URL.Query()
	if q.Get("token") != "" {
		return ""
	}
	return q.Get("ticket")
}

// useTicket is the owner's check of a request that came with a ticket instead of a
// token: the ticket must be one this node issued for the request's sandbox and pty,
// unexpired and unused. It returns r speaking for the ticket's principal, or the 401
// a wrong token gets.
func (s *Server) useTicket(r *http.Request, text string) (*http.Request, error) {
	who, ok := s.tickets.use(text, r.PathValue("sb"), r.PathValue("ptyID"))
	if !ok {
		return nil, errorf(http.StatusUnauthorized, codeUnauthorized,
			"missing or wrong token, or a connect ticket that is unknown, used, expired or for another pty")
	}
	return r.WithContext(withPrincipal(r.Context(), who)), nil
}
