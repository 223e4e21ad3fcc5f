// Package wire is the binary encoding of policy requests and answers exchanged between
// the host ([github.com/sandgate/sandgate/plugins]) and a guest module. It is defined
// once here and compiled into both sides: the host and the Go guest SDK
// ([github.com/sandgate/sandgate/plugins/guest]) build it for linux and for
// GOOS=wasip1 GOARCH=wasm. plugins/ABI.md is the language-neutral description.
//
// # Encoding
//
// Every message starts with a one-byte tag. Integers are unsigned LEB128 (uvarint);
// strings are a uvarint length followed by UTF-8 bytes; a label map is a uvarint count
// followed by key, value string pairs; a string list is a uvarint count followed by
// strings. Nothing follows the last field. Encoders append to a caller's buffer and the
// decoders use no reflection, so the hot path allocates only the strings it returns.
//
// # Concurrency
//
// The functions keep no state and are safe for concurrent use.
package wire
