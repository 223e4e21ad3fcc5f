// Package sdk is the Go client of the sandgate HTTP API (v1, described by gateway/openapi.json): sandboxes,
// stateless exec, processes, sessions, terminals, files, events, messages and cluster
// membership.
//
// # Entry points
//
// [New] makes a [Client] for a gateway's base URL and token. Every route of the
// contract has one typed method on it, named for what it does ([Client.CreateSandbox],
// [Client.Exec], [Client.CreateProcess], [Client.ExecSession], [Client.PutTerminal],
// [Client.ReadFile], [Client.PostEvent], [Client.GetCluster], …).
//
// Streams come in two kinds:
//
//   - [Client.ProcessOutput] and [Client.StreamEvents] return iterators over the
//     server-sent event streams. They resume where they stopped (by output offset or
//     event seq) when the connection drops, up to [Options.MaxRetries] times in a row.
//   - [Client.Attach] opens the WebSocket of a process or a terminal and returns an
//     [Attachment] that reads output, sends input, resize and signals, and reconnects
//     with the byte offset it reached when the connection drops.
//
// # Clusters
//
// Any node of a cluster answers any request, so a client may be given several
// members' addresses ([Options.Endpoints]): a request that cannot connect to one goes
// to the next, and streams reconnect the same way, so they resume through another
// node when theirs stops. Streams also resume after an ownership move (the server
// closes them with 1012); a move that ended a process leaves its output on the old
// node, so the bytes a stream had not delivered come as a gap before the exit.
//
// # Errors
//
// A request the gateway refuses returns an [*Error] carrying the HTTP status, the
// contract's stable code and message, and Retry-After. Use [errors.As], [ErrorCode] or
// the IsXxx helpers such as [IsNotFound] to tell them apart. Transport failures are
// returned wrapped, as they come from net/http. A 503 or a transport failure after
// the request was sent leaves its outcome unknown: the request may have run. net/http
// sends a GET again by itself after a kept-alive connection broke before any answer;
// [Client.TakeMessages] is kept from that, since a take run twice hides messages the
// caller never receives.
//
// # Units
//
// Wire durations are int64 milliseconds in fields named …MS, exactly as the JSON
// fields end in _ms. Times are [time.Time]; times that may be null are *time.Time.
//
// # Caveats
//
// The contract leaves the JSON of the event stream's data lines loosely specified; this
// package reads an event's data as the same object the events list returns
// ({"seq","type","at","data"}), falling back to the SSE id and event name. A taken
// message is {"id","data","attempts","posted_at"}; messages are delivered at least
// once, so acknowledge each ([Client.AckMessage]) once it is handled.
package sdk
