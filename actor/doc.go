// Package actor owns the actor system (mailbox, activation, passivation, alarms, durable
// storage) and the sandbox actor (budgets, lifecycle, event log, messages) on top of
// package runtime. It may import runtime and nothing else of ours.
//
// # Entry points
//
// [Open] starts a [Node] on a data directory; the gateway calls its methods
// (CreateSandbox, Exec, SessionExec, PutTerminal, Events, PostMessage, ...) and
// [Node.Close]s it on shutdown. [Storage] is the durable-state seam ([OpenBolt] is the
// bbolt implementation), [Policy] decides budgets, [Clock] drives alarms
// (actortest.Clock is a fake for tests).
//
// # Actors
//
// Each sandbox is one actor: one goroutine draining a bounded mailbox (a full one is
// [ErrMailboxFull]). Every request is a turn run to completion, one at a time, in
// mailbox order, so get-or-create (sandboxes, sessions, terminals) and delete are
// serialized. A request that finds the actor idle with nothing queued runs its turn on
// the caller's goroutine instead, under the same lock and with the same commit and
// output gate: waking the actor's goroutine and waiting for it cost tens of µs on a
// machine with an idle core. The node's
// registry starts at most one activation per sandbox id, however many first requests
// race; activation loads the sandbox's durable record, sessions, terminals, counters and
// queued messages. Config.Admission is checked before a sandbox is activated and
// before every turn (see Running in a cluster).
//
// Turns never wait for long work: exec, session commands, process kills and long-polls
// run on the caller's goroutine, off the actor, and post their completion back as a
// system message (system messages use an unbounded queue, so finished work is never
// refused). A cancelled caller returns ctx.Err() at once; the actor skips its turn if it
// had not started it and never blocks answering it.
//
// # Durability and the output gate
//
// The turns of one mailbox drain (up to 64) write into one [Batch]; the batch is
// committed, and only then are their answers released, so a reply that reports a state
// change is never ahead of the disk. The bbolt store commits concurrent batches of many
// actors in one transaction (group commit). Every batch carries the owner epoch the
// activation was loaded at (Config.Epoch); a store rejects older epochs with
// [ErrFenced], and the actor then drops its activation and answers [ErrUnavailable]. A
// failed commit also drops the activation, so memory never runs ahead of storage. A
// commit whose outcome is unknown ([ErrIndeterminate]) is one of them: the store
// settles it before its next Read of the sandbox, the next activation loads what
// landed, and it also resets the node's owner index and alarm of the sandbox from
// what it loaded (unsettled.go). A delete removes the sandbox's workspace and image
// only after its commit, and ends its group so that a create of the same id queued
// behind it runs after the removal; what a failed commit or a crash leaves is
// removed once storage shows the record gone (workspace_deleted.go).
//
// # Running in a cluster
//
// The gateway plugs the cluster in through Config.Admission (may this node run the
// sandbox now: it owns it and holds a lease) and Config.Epoch (the sandbox's owner
// epoch), and tells the node what the cluster decides:
//
//   - [Node.Fence] when the node lost its lease: every activation ends at once, its
//     processes killed, nothing written; requests fail with ErrUnavailable until
//     admission allows again, and then activate from storage (fence.go).
//   - [Node.Release] when the table moved sandboxes away: the same for those.
//   - [Node.SandboxesChanged] when the store applied other nodes' writes: the owner
//     index and the alarm heap re-read those sandboxes (changed.go).
//   - [Node.Busy] and [Node.BusySandboxes] for the leader's rebalancing, which leaves
//     busy sandboxes where they are (busy.go).
//   - [Node.Deactivate], then [Node.ExportWorkspace] on the old owner and
//     [Node.ImportWorkspace] on the new one, for a planned move: the workspace travels
//     as a tar stream the gateway carries (workspace_move.go). [Node.DropWorkspace]
//     removes the old owner's copy once the move completed; an activation of a sandbox
//     that arrives from another node without its workspace removes the leftover of an
//     earlier stay first (workspace_stale.go).
//
// An activation is bound to the epoch it was loaded at: a group of turns that finds
// the epoch moved ends it like a fence and hands its requests to a fresh activation.
// An activation runs turns only while admission allows it: a refusal answers
// ErrUnavailable and ends the activation without writing, and a refused sandbox is
// not activated at all. So a node that may not run a sandbox never writes it, not by
// an alarm or a passivation either; alarms of sandboxes other nodes own stay in the
// heap unserved. On activation, a record last written by another node
// gives sandbox.moved, naming what was lost: "processes" (recorded as exited with
// reason "owner_lost") and "workspace" (moved.go).
//
// # Passivation
//
// An actor with no running processes or terminals, no live session shells, no attached
// clients ([Node.Attach]) and no work in flight is dropped from memory
// Config.PassivateAfter after its last request. So a running sandbox with a session stays
// in memory until it hibernates (which closes the shells), then passivates. A
// passivated sandbox costs only its alarm-heap entry in memory.
//
// With Config.DiskImages, a sandbox's workspace is an ext4 image of its DiskBytes
// budget, mounted while its actor is active and unmounted after its runtime closed, at
// hibernation, passivation and close: a passivated sandbox holds no mount and no loop
// device (disk.go; docs/design.md, "Workspace disk quotas").
//
// # Lifecycle and alarms
//
// States: running → hibernated (idle TTL passed) → running (next request that needs
// processes; event sandbox.woke); running|hibernated → expired (max duration; new work
// is [ErrExpired]); failed (runtime could not start). Each sandbox has at most one
// persisted alarm time (idle TTL or max duration, whichever is sooner) in one node-wide
// timer heap. Activity, for idle TTL, means requests that do work (exec, processes,
// sessions, terminals, files, events, messages), work still in flight, and attached
// clients. Background processes alone do not keep a sandbox awake: hibernation ends
// them, and max duration bounds everything. Hibernation ends every process (recording
// process.exited) and keeps sessions (cwd + exported env, saved after every command)
// and terminals (their settings) to restart them on the next request that needs them.
// Every process's final record is saved when its exit is recorded, so it stays listed
// for its keep time across hibernation, passivation, expiry and restarts, but without
// its output, and without a live handle: Node.Process answers it as an [ExitedError].
//
// # Events and messages
//
// Each sandbox has a durable event log: seq increases by one per event, the newest
// Config.EventLogLimit are kept, fewer when they pass Config.EventLogBytes. Followers ([Node.SubscribeEvents]) read committed
// events from storage and are only signalled by the actor, so a slow follower never
// blocks it. A sandbox deleted and created again under the same id continues its seq
// and message numbers after the old one's (seqbase.go). Messages are a durable FIFO
// delivered at least once: [Node.TakeMessages] hides what it returns for a visibility
// time, durably before answering, and [Node.AckMessages] removes them; it long-polls and
// is woken when a message is committed or a hidden one becomes visible again. A take
// whose ctx ends has an unknown outcome (its turn may still hide messages); a server
// that must end a long-poll with a definite answer closes TakeOptions.Stop instead. The
// queue stays in storage and is paged by each take. Events, messages and the pages
// read of them are bounded (MaxEventBytes, MaxMessageBytes, MaxEventPageBytes), and so
// are the log and the queue in bytes (Config.EventLogBytes, MessageQueueBytes): an
// activation sums the stored records' sizes when it loads and then keeps the totals
// with each post, drop and acknowledgement (logbytes.go).
//
// # Bounds on what a sandbox remembers
//
// Exited process records are kept for their keep time and at most Config.ExitedLimit
// of them, the oldest dropped first; sessions and terminals, dead or stopped ones
// included, at most Config.SessionLimit and TerminalLimit, past which a new id is a
// *BudgetError (exited.go, kept.go). A session's saved snapshot is within runtime's env
// bounds: a command past them keeps the previous one, says so in its result, and logs
// session.snapshot_skipped when saving stops (snapshot.go). [Node.EachSandbox] lists sandboxes from storage in
// pages, each in a read of its own ([SandboxPager]), and hands them out outside any
// read, so a long list is never held whole and a slow reader holds no read open
// (list.go).
//
// # Caveats
//
// Running processes do not survive Node.Close or a restart: they are ended and
// process.exited is recorded (not by a node that may not run the sandbox any more).
// Workspaces are local to a node: a sandbox moved by a failover starts with an empty
// one; only a planned move brings it along (ExportWorkspace, ImportWorkspace). Commands
// of one session run in mailbox order (each waits
// for the previous one, off the actor). Exec and session command timeouts are
// wall-clock (the runtime's), not Config.Clock. Workspace handles are the caller's to
// Close. A full mailbox refuses requests (ErrMailboxFull) rather than queueing them, so
// a burst larger than Config.MailboxSize to one sandbox is partly refused.
package actor
