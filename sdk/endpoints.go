package sdk

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
)

// Endpoints: a client of a cluster may know several members' addresses
// ([Options.Endpoints]), as etcd's clients take a list of endpoints. Every node
// answers every request (it forwards to the sandbox's owner), so any of them will do.
// The client uses one at a time, starting with the base URL:
//
//  1. A request that cannot connect (the node is stopped, or its address refuses)
//     was never received, so it is sent at once to the next endpoint, and so on,
//     each at most once per call. The client then stays on the one that answered.
//  2. A request that failed after it connected (a reset, a dropped answer) is not
//     sent again, as it may have run; only the next call moves on.
//  3. Streams reconnect through the same path, so a stream whose node stops
//     resumes through another one, from the offset or seq it reached.
//
// A request body that is a stream (a file upload) cannot be read twice and is never
// sent to a second endpoint.

// endpoints are a client's base URLs and the index of the one in use. It is safe for
// concurrent use.
type endpoints struct {
	urls []*url.URL
	cur  atomic.Int32
}

// parseEndpoints parses base and more, the base URLs of one cluster.
func parseEndpoints(base string, more []string) (*endpoints, error) {
	e := &endpoints{}
	for _, s := range append([]string{base}, more...) {
		u, err := url.Parse(strings.TrimRight(s, "/"))
		switch {
		case err != nil:
			return nil, fmt.Errorf("sdk: bad base URL %q: %w", s, err)
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, fmt.Errorf("sdk: bad base URL %q: scheme must be http or https", s)
		case u.Host == "":
			return nil, fmt.Errorf("sdk: bad base URL %q: no host", s)
		}
		e.urls = append(e.urls, u)
	}
	return e, nil
}

// current returns the endpoint in use and its index, for failed.
func (e *endpoints) current() (int, *url.URL) {
	i := int(e.cur.Load())
	return i, e.urls[i]
}

// failed moves the client past endpoint i, which could not be reached, unless a
// concurrent call already moved it.
func (e *endpoints) failed(i int) {
	e.cur.CompareAndSwap(int32(i), int32((i+1)%len(e.urls)))
}

// unreachable reports whether err is a failure to connect: the request was not sent.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
