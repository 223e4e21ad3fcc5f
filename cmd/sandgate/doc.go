// Command sandgate is the sandgate binary: `sandgate serve` runs a gateway node, and
// the client subcommands (exec, ps, logs, attach, sandboxes, cluster) talk to a gateway
// through the Go SDK (package sdk). Run `sandgate help` for the list.
//
// # Layout
//
// main.go dispatches on the first argument; each subcommand lives in its own cmd_*.go
// file and only parses flags, calls the SDK and prints; serve.go parses serve's flags
// and runs a gateway.Server.
//
// # Exit codes
//
// 0 on success, 1 when a request fails (the contract's code and message are printed),
// 2 for a usage error; `exec` exits with the command's own exit code and `attach` with
// the terminal shell's, when it exited.
package main
