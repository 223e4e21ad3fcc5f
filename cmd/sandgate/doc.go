// Command sandgate is the sandgate binary: `sandgate serve` runs a gateway node, and
// the client subcommands (create, ls, rm, exec, ps, inspect, kill, logs, attach, cp,
// events, cluster) talk to a gateway through the Go SDK (package sdk). Run `sandgate help`
// for the list.
//
// # Layout
//
// main.go dispatches on the first argument; each subcommand lives in its own cmd_*.go
// file and only parses flags, calls the SDK and prints; cli.go holds the flag and
// error helpers they share, tty.go the raw-mode terminal loop of attach and exec -t.
// serve.go parses serve's flags and runs a gateway.Server.
//
// # Exit codes
//
// 0 on success. Errors of sandgate itself exit 125, docker's convention, so they
// differ from a command's own codes: a usage error (the command's usage is printed),
// a request the gateway refused (its code and message are printed), an unreachable
// gateway. 130 when interrupted. `exec` exits with the command's own exit code
// (128+N when killed by signal N, 124 when its --timeout killed it) and `attach` with
// the terminal shell's, when it exited. serve exits 125 for a bad command line or
// configuration too, and 1 when it fails after starting.
//
// # Streams
//
// exec, attach, logs -f and events -f follow SSE or WebSocket streams through the
// SDK, which reconnects after a drop or a 1012 close from the offset or seq reached;
// the CLI lets it retry for about 30 s (streamRetries), long enough for a node
// restart.
//
// A planned move of a sandbox (a drain of its node) ends its running processes, and
// their output buffers stay on the old node. So exec, exec -t and logs -f print every
// byte their streams delivered, once, then report the bytes written after the old
// node closed the streams as lost (a byte range on stderr, as for output the buffer
// dropped), and exit as for any process that ended: exec with 128+N for the signal
// that ended it, logs with 0. attach stays attached: the terminal starts a new shell
// on the new owner, which attach announces. events -f prints sandbox.moved.
//
// $SANDGATE_ADDR (or --addr) may list several members' addresses, separated by
// commas (as etcdctl's --endpoints): a request that cannot connect goes to the next
// one (sdk.Options.Endpoints), so a stream also resumes through another node when
// the one it talks to stops.
//
// # Package initialisation
//
// The binary is also every sandbox's init (runtime/internal/nsinit re-executes it),
// and every CLI run starts it, so what its packages build at initialisation is paid
// in each of those processes. Ours build nothing there: no package-level regexps or
// maps (compile at first use behind a sync.Once, or use a switch or an array).
// TestPackageInitAllocations bounds the binary's package initialisation, and the
// share an init runs before nsinit takes over; docs/design.md ("What an init
// initialises") says why the two differ.
package main
