// Package clustertest runs real `sandgate serve` processes on loopback for tests: one
// node, or a cluster of N that join the first. It is a test helper (it takes a
// testing.TB, like internal/leakcheck), imported by tests only.
//
// # Entry points
//
//   - Binary builds cmd/sandgate once per test binary and returns its path; Cleanup
//     removes it (call it from TestMain, as this package's own tests do).
//     Config.Binary runs another executable instead (a benchmark comparing two
//     builds side by side).
//   - Start starts Config.Nodes nodes: node 1 bootstraps, nodes 2..N are started with
//     --join pointing at node 1's HTTP address. Each node gets free loopback ports
//     for --listen and --raft-listen, its own --data directory, --node-id n1..nN and
//     the cluster's --token. Start returns once every node has logged
//     `listening on http://ADDR` and, for more than one node, once node 1 lists every
//     member alive.
//   - Node.Kill (SIGKILL), Node.Stop (SIGTERM, then SIGKILL past Config.StopTimeout)
//     and Node.Restart (same id, ports and data directory) drive failures.
//   - Node.Do sends an authenticated API request to one node.
//
// # Lifecycle
//
//  1. Start registers a cleanup per node before it starts it, so a test that fails
//     half way leaves nothing behind.
//  2. A node is started in a process group of its own. Killing it kills the group and
//     every descendant the node had (sandbox inits and processes, which may sit in
//     process groups and sessions of their own), each through a pidfd opened before
//     the kill, so a reused pid is never signalled; then it waits until each is gone
//     and reaps those re-parented to the test (leakcheck makes the test binary a
//     subreaper).
//  3. A node's stdout and stderr go to a log file; when the test has failed, the
//     cleanup prints the end of every node's log.
//
// # The OpenCode SDK test
//
// TestOpenCodeSDK runs tools/opencode/pty.test.mjs (node --test; the published
// @opencode-ai/sdk and ws, pinned in tools/package-lock.json) against a node that does
// not own its sandbox, so that every OpenCode route, the connect ticket and the
// WebSocket cross the cluster's forwarding. Right after a start the leader rebalances
// partitions onto the new members for a while; it never moves a sandbox with running
// work, so the test starts a process in the sandbox before it picks the node, and
// checks afterwards that the process still runs and the owner did not change. It
// skips only when tools/node_modules lacks the packages (`make tools`).
//
// # Caveats
//
// Nodes run without disk images (--disk-images=false) unless Config.Args says
// otherwise: a node killed with SIGKILL cannot unmount its sandboxes' images. The
// runtime is serve's default unless $SANDGATE_TEST_RUNTIME names one (the Makefile
// sets it for the local-runtime pass).
package clustertest
