package gateway

import "errors"

// ErrNoToken is returned by New for a Config that listens on an address other than
// loopback without a token: anyone who reaches the address could run commands.
var ErrNoToken = errors.New("gateway: no token")
