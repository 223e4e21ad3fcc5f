package runtime

// platformErr is returned by New on this platform: nil, Linux is supported.
var platformErr error
