package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Node-to-node HTTP requests (the workspace stream of a planned move) are signed with
// the cluster secret, which only members hold: API tokens, a tenant's or an admin's,
// are neither needed nor accepted.
//
//	X-Sandgate-Node:     <from> <unix ms> <hex HMAC-SHA256(secret, "request" method URI from ms)>
//	X-Sandgate-Body-MAC: <hex HMAC-SHA256(secret, "body" request-MAC body)>, a trailer
//
// The first binds the request line to a member and a moment (accepted within
// nodeAuthSkew of the receiver's clock); the trailer binds the body to that request,
// so a body is used only once its MAC checked, after it was read whole. A recorded
// request replayed within the skew can only deliver its own body again, to the same
// URI; the receiver takes a workspace once per handoff. The traffic is not encrypted
// (the API is plain HTTP too).

const (
	nodeAuthHeader  = "X-Sandgate-Node"
	nodeBodyTrailer = "X-Sandgate-Body-Mac" // canonical form of X-Sandgate-Body-MAC
	// nodeAuthSkew is how far a signed request's time may be from the receiver's.
	nodeAuthSkew = time.Minute
)

// errNodeAuth is the cause of every refused node signature.
var errNodeAuth = errors.New("gateway: node request signature refused")

// nodeMAC is HMAC-SHA256 under secret of the parts, each followed by a zero byte.
func nodeMAC(secret []byte, parts ...string) []byte {
	h := hmac.New(sha256.New, secret)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// signNodeRequest signs r as member from at now and wraps its body (which must be
// set) so that the body's MAC is sent as a trailer once the body has been read.
func signNodeRequest(secret []byte, r *http.Request, from string, now time.Time) {
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	mac := nodeMAC(secret, "request", r.Method, r.URL.RequestURI(), from, ms)
	r.Header.Set(nodeAuthHeader, from+" "+ms+" "+hex.EncodeToString(mac))
	r.Trailer = http.Header{nodeBodyTrailer: nil}
	r.ContentLength = -1
	r.Body = &macBody{r: r.Body, h: bodyMAC(secret, mac), trailer: r.Trailer}
}

// bodyMAC starts the MAC of a body sent under request MAC mac.
func bodyMAC(secret, mac []byte) hash.Hash {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("body"))
	h.Write([]byte{0})
	h.Write(mac)
	h.Write([]byte{0})
	return h
}

// macBody hashes a body as it is read and, at its end, sets the trailer.
type macBody struct {
	r       io.ReadCloser
	h       hash.Hash
	trailer http.Header
}

func (b *macBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		b.trailer.Set(nodeBodyTrailer, hex.EncodeToString(b.h.Sum(nil)))
	}
	return n, err
}

func (b *macBody) Close() error { return b.r.Close() }

// nodeRequest is a request whose signature checked: from is the member that sent it.
// Its body is read through Body, and Verify tells, once Body was read to its end,
// whether it is the one the sender signed.
type nodeRequest struct {
	from string
	r    *http.Request
	h    hash.Hash
}

// verifyNodeRequest checks r's signature at now.
func verifyNodeRequest(secret []byte, r *http.Request, now time.Time) (*nodeRequest, error) {
	from, rest, _ := strings.Cut(r.Header.Get(nodeAuthHeader), " ")
	ms, sig, _ := strings.Cut(rest, " ")
	t, err := strconv.ParseInt(ms, 10, 64)
	if from == "" || err != nil {
		return nil, fmt.Errorf("%w: missing or malformed %s", errNodeAuth, nodeAuthHeader)
	}
	if d := now.Sub(time.UnixMilli(t)); d > nodeAuthSkew || d < -nodeAuthSkew {
		return nil, fmt.Errorf("%w: signed %v from this node's clock", errNodeAuth, d.Round(time.Second))
	}
	got, err := hex.DecodeString(sig)
	want := nodeMAC(secret, "request", r.Method, r.URL.RequestURI(), from, ms)
	if err != nil || !hmac.Equal(got, want) {
		return nil, fmt.Errorf("%w: wrong MAC", errNodeAuth)
	}
	return &nodeRequest{from: from, r: r, h: bodyMAC(secret, want)}, nil
}

// Read reads the body, hashing it.
func (n *nodeRequest) Read(p []byte) (int, error) {
	c, err := n.r.Body.Read(p)
	n.h.Write(p[:c])
	return c, err
}

// verify reads what is left of the body (a tar stream ends before its padding) and
// checks the body's MAC against the trailer.
func (n *nodeRequest) verify() error {
	if _, err := io.Copy(io.Discard, n); err != nil {
		return fmt.Errorf("failed to read the rest of the body: %w", err)
	}
	got, err := hex.DecodeString(n.r.Trailer.Get(nodeBodyTrailer))
	if err != nil || !hmac.Equal(got, n.h.Sum(nil)) {
		return fmt.Errorf("%w: the body's MAC is missing or wrong", errNodeAuth)
	}
	return nil
}
