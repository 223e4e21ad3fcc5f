// Package gateway serves the sandgate HTTP API (REST, SSE and WebSocket) over a local
// actor node: auth and tenancy, request limits and deadlines, the routing policy
// (plugins), metrics and the browser pages. It owns the wiring of the other packages:
// it opens the actor node with the policy, budgets and runtime driver, and turns every
// error into the API's error shape in one place (errmap.go). The contract it serves,
// with every choice made where the contract is silent, is openapi.json beside this
// file (served at /v1/openapi.json); docs/design.md explains the mechanisms.
//
// # Entry points
//
//  1. [New] validates a [Config], opens the actor node's storage and the policy plugin,
//     and builds the handler (the route table is routes.go).
//  2. [Server.Serve] answers on a listener with header, body and idle deadlines; or
//     mount [Server.Handler] on a server of your own.
//  3. [Server.ReloadPolicy] swaps the policy plugin (SIGHUP); the file is also watched.
//  4. [Server.Shutdown] stops accepting, ends SSE and WebSocket streams, waits for
//     requests for Config.ShutdownGrace at most, then ends every process tree and
//     closes storage, whatever requests are still stuck. [Server.Abort] is the forced
//     exit: every process tree gets SIGKILL at once.
//
// [LoadOrCreateToken] and [ParseTokens] (or [LoadTokens]) make the token table of
// Config.Tokens: each token speaks for a [Principal], a tenant, admin or not.
//
// # Requests
//
// Every route goes through one wrapper (routes.go): a request id, the token (a missing
// or wrong one is 401 before anything else, and before the body is read), path ids, the
// tenancy check for routes that name a sandbox (another tenant's sandbox is 404, as if
// absent, from an in-memory owner index that never wakes a sandbox), the routing policy,
// then the handler. Handlers decode strictly (unknown or case-folded fields, duplicate
// keys and trailing data are 400; NUL bytes are 400; an integer a field cannot hold is
// 400 giving its range) within a body limit (413), and every item kept from a body
// (env, labels, paths, a process's command, tag and label) within a bound of its own
// (limits.go; docs/limits.md lists them all). Millisecond fields and parameters
// saturate rather than overflow a time.Duration. Errors become the API's shape in one
// place (errmap.go), and every 503 carries Retry-After.
//
// Lists (sandboxes, processes, sessions, terminals, a directory) are written item by
// item as they are read, never built whole (list_stream.go): the sandbox list comes
// from storage in pages (actor.Node.EachSandbox), and a list over 64 KiB is sent
// chunked; a failure midway cuts the connection rather than end a list that would read
// as whole.
//
// # Streams
//
// SSE and WebSocket output streams follow a process's output ring from an offset. A
// reader that keeps reading is never skipped: the process waits for it. One that stops
// for longer than the hold bound is skipped (a gap when it reads again), and one whose
// writes pass the write deadline is dropped and stops counting as attached. A stream's
// exit frame is sent only after the actor committed the process's exit, so the event
// log is never behind what a client was shown. A WebSocket client costs one goroutine
// while idle: output is sent by a pump that runs only while there is output (see
// wsAttachment).
//
// The SSE output stream carries bytes as base64, or with ?encoding=utf8 as text whose
// events end on character boundaries (sse_output.go); ids are byte offsets either way.
// A WebSocket client's ?input= says which of its frames are input and which are JSON
// controls, so that wscat's text lines can be typed (ws_input.go); a control the
// server cannot use is answered with an error message, never ignored.
//
// # Forwarding
//
// Any node answers any request (forward.go; docs/design.md, "Forwarding"). A request
// that names a sandbox, and a create, is served by the sandbox's owner in the
// cluster's table: here, or through httputil.ReverseProxy (HTTP, SSE and WebSocket)
// after the token and path ids are checked; the owner checks the token, tenancy and
// policy again. A stale table is a 421 with the owner's table index, waited for and
// retried once. An owner whose replica does not know the sandbox catches up with the
// leader once (one empty write through the log) before it serves, so a read right
// after a create through another node is not a 404 (forward_unknown.go); a node
// alone in its cluster never does. While a sandbox has no live owner the request is
// held up to Config.HoldTimeout, then 503. When this node stops owning a sandbox its
// streams end, WebSockets with 1012 (streams_registry.go), and clients resume by
// offset. A planned
// move (a drain or a rebalance: cluster.Config.OnHandoff) ends the old owner's
// activations cleanly first, so the next owner records it as planned
// (cluster_handoff.go; docs/design.md, "Planned moves"), then announces each moving
// sandbox's workspace to the next owner, which holds the sandbox until it arrived, and
// streams it there (POST /v1/cluster/workspaces, PUT /v1/cluster/workspaces/{sb}:
// node-to-node routes outside the API that take no token but a signature under the
// cluster secret; workspace_move*.go, workspace_arrivals.go, node_auth.go). Once the
// new owner installed a workspace and the handoff completed, the old owner removes its
// copy, and a node sweeps at start the copies of sandboxes other nodes own
// (workspace_cleanup.go; docs/design.md, "Leftover workspaces").
//
// # OpenCode
//
// Under /v1/sandboxes/{sb}/opencode the gateway serves OpenCode's PTY API as a
// mapping onto processes (opencode.go; docs/opencode.md): a pty is a PTY process, its
// connect WebSocket resumes by a cursor in UTF-16 units through runtime's text index,
// a single-use ticket kept by the sandbox's owner stands in for the token there, and
// the subtree answers CORS for the pages the WebSocket Origin rule allows.
//
// # Metrics
//
// /metrics (metrics.go) needs a token on the API listener; [Server.ServeMetrics]
// serves it without one on a listener of its own. Request latency is recorded for
// request/response routes only: streams are recorded, by lifetime, in histograms of
// their own when they end.
//
// # Cluster membership
//
// Every node is a member of a raft cluster (a one-node cluster without Config.Join).
// With Config.Join and no raft state, New fetches the cluster secret from the seed
// with the node's admin token, opens its raft port with it, asks the seed to add it
// (forwarded to the leader) and waits for its first lease (cluster_join.go).
// Membership changes run on the leader; other nodes forward them there over HTTP with
// the caller's token (cluster_members.go). API tokens are the cluster's: hashes in the
// replicated key/value table, merged with the node's own into a map swapped whole
// (cluster_tokens.go, auth.go).
//
// # Caveats
//
//   - The WebSocket Origin check trusts the listen address and Config.AllowedOrigins,
//     never the request's Host header; a server on all interfaces accepts browser pages
//     only from Config.AllowedOrigins.
//   - Processes run with the runtime's local driver: as the server's user, not
//     isolated from the host.
package gateway
