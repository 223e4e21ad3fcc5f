package gateway

import "errors"

// ErrConfig is returned by New for a Config it refuses before starting anything: a
// listen address other than loopback without a token (anyone who reaches it could
// run commands), a node id that is not a valid id, a token with an empty tenant, or
// an unknown sandbox network.
var ErrConfig = errors.New("gateway: invalid configuration")
