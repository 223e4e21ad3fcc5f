// Package linearize records what clients of a sandgate cluster did and saw, and checks
// the record for linearizability with porcupine (github.com/anishathalye/porcupine).
// It is a test-support package: the cluster tests drive real servers, record every
// client operation here, and fail when the history could not have come from one copy
// of each object applying operations one at a time, each at some instant between its
// call and its return.
//
// # Entry points
//
//   - NewRecorder makes a Recorder; Recorder.Call starts an operation on an object
//     (a string key, for example "events/sb1") and returns an *Op; Op.Return records
//     its result, Op.Unknown an outcome the client cannot know (a timeout, a 503 after
//     the hold timeout, a connection cut), Op.Discard an operation that surely had no
//     effect and returned nothing (a 400 or 404 before anything was done).
//   - Recorder.Check checks every object's history against the model its inputs
//     belong to and returns an *Error for each object that fails.
//
// # Models
//
// The input type chooses the model, and one object takes the inputs of one model only.
//
//   - Event log (Append, ReadLog): an append-only list whose sequence numbers grow by
//     one per entry. Entries the client did not append (the server's own events, such
//     as sandbox.moved) may appear between appends; once a read has shown an entry,
//     every later read shows the same entry at the same seq. An acknowledged append
//     that a later complete read does not show, an entry that changes, a read that
//     shows fewer entries than an earlier one, or an append whose seq is not above
//     every seq already seen is not linearizable.
//   - Register (SetVar, GetVar): one string value, initially empty, such as a session's
//     exported variable: set by `export X=v`, read by `echo "$X"`.
//   - Message queue (Post, Take, Ack): at-least-once delivery in post order with
//     visibility deadlines stamped by the server that takes a message. A take must
//     return the oldest visible messages; a taken message that is not acknowledged may
//     come back once its deadline has passed, with a larger attempt count; an
//     acknowledged one never comes back; a message whose post was acknowledged is
//     never lost.
//
// # Time
//
// A Recorder stamps calls and returns with one monotonic clock shared by every
// goroutine (Config.Now injects another, for tests). The queue model compares those
// stamps with the visibility deadlines the server wrote: a message taken by a call
// between c and r with visibility V became visible again between c+V and r+V on the
// server's clock. The server and the test read the same host's clocks; Slack (100 ms)
// absorbs the difference between the wall clock a server stamps with and the
// monotonic clock the recorder reads.
//
// # Unknown outcomes
//
// An operation with an unknown outcome gets porcupine's infinite return time: it may
// take effect at any point after its call, or never. Its model step allows both: an
// append that may have happened may show up in later reads or not, a set that may
// have happened leaves the register with either value, a take that may have happened
// may have hidden any message that was visible, an ack that may have happened may
// have removed the message. A read with an unknown outcome says nothing and is left
// out of the history.
//
// # Caveats
//
//   - Every operation on a checked object must be recorded: a message posted or an
//     event appended by someone else makes a correct server look wrong (the event log
//     tolerates entries whose data is not that of a recorded append, as the server's
//     own events are).
//   - A read (ReadLog) counts as complete when it returned fewer than its Limit entries:
//     keep entries small enough that the server's page byte cap is not what ended it.
//   - A take counts as exhaustive when it returned fewer than its Max messages, so
//     messages must be small enough that the server's byte cap per take is not hit.
//   - Checking is NP-complete in general; histories of a few hundred operations per
//     object with little concurrency check in milliseconds. CheckOptions.Timeout bounds
//     each object's check, and a check that times out is an error too.
package linearize
