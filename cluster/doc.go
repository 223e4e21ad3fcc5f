// Package cluster owns the raft node of a sandgate cluster: the replicated member
// table, the sandbox → node ownership table with its epochs, the replicated sandbox
// records behind the actors, and the leader's membership and placement duties. It
// imports nothing of ours and speaks no HTTP: the gateway forwards requests, serves
// the join route and adapts actor.Admission, actor.Epoch and actor.Storage to this
// package.
//
// # What it owns
//
//   - A raft server (hashicorp/raft) with its log in segment files of our own
//     write-ahead log under DataDir/raft/wal (see Deviations) behind a 512-entry
//     log cache, file snapshots (two kept) and a TCP transport.
//   - The FSM: members (id, raft and HTTP address, labels,
//     alive|draining|down|left), a fixed table of Partitions (4096) entries →
//     {owner, epoch, state active|handoff, next}, and pins (one sandbox → a member
//     chosen by label selector, for policy pools).
//   - Sandbox records: every sandbox's small records (the actor's durable state) in
//     the FSM's own bbolt file, DataDir/raft/state.db, written only by applying
//     epoch-checked batches from the log (see Sandbox records).
//   - Placement: the leader assigns partitions to alive members by rendezvous hashing,
//     and moves one its owner still serves by a two-phase handoff (Planned moves).
//   - Node leases: heartbeats to the leader, self-fencing when the lease lapses, and
//     the leader's failure detection, which moves a silent member's partitions only
//     once its lease has surely run out (see Leases and fencing).
//
// # Entry points
//
//   - Open starts a node; Close stops it.
//   - Owner(sandboxID) is the request-path lookup: partition = FNV-1a(id) mod 4096,
//     then the table (or the sandbox's pin). It takes no lock and allocates nothing:
//     the FSM publishes each new table as an immutable value behind an atomic
//     pointer. About 17 ns against 11 ns for a bare map lookup in the same run.
//   - Admit(sandboxID) is the check before every actor turn: nil only when the local
//     table gives the sandbox to this node and its lease is valid; otherwise a
//     *NotOwnerError naming the owner (forward there), ErrHandoff while its
//     partition is being handed over (hold and retry) or ErrLeaseExpired (503). No
//     lock, no allocation: 105-300 ns against 37-49 ns for Owner in the same runs
//     (BenchmarkAdmit, a loaded 2-core VM); the difference is mostly one read of
//     the monotonic clock. Epoch(sandboxID) is the epoch to stamp the turn's
//     writes with; Lease reports the lease.
//   - Config.OnFence is called when the lease lapses (stop this node's actors and end
//     their processes), Config.OnLease when it is valid again, Config.OnHandoff when
//     partitions of this node are handed to another (stop their actors, then return).
//   - Write, Read and Sandboxes are the sandbox store (store.go): Write commits a
//     Batch through the leader from any node, Read serves one sandbox from this
//     node's replica with its acknowledged writes on top, Sandboxes lists them all;
//     CatchUp (a write) and ReadBarrier (a read index: docs/design.md) wait for every
//     entry committed before them. Config.OnApply tells the gateway which sandboxes
//     each write changed; Config.BeforeBatches (tests only) holds a replica behind.
//   - Join, Remove, Drain, Pin, Unpin and DropPin run on the leader only; elsewhere
//     they return a *NotLeaderError naming the leader's id and addresses so the
//     gateway can forward. DropPin removes a pin only if no record of its sandbox
//     was written under it (a create that failed after pinning; see Pins).
//   - SetValues (leader only, like Join) and Value/Values are a small replicated
//     key/value table for what every node must agree on besides membership and
//     placement (the gateway keeps its API token hashes there); Config.OnValues
//     tells a node its table changed.
//   - Members, Table, Partition, Placement, PinOf, Drained, Leader, AppliedIndex,
//     RejectedConns and Err are getters; Voters (raft suffrage), Spread (partitions
//     per owner), Pinned (pins per owner) and Unmovable (pins a drain cannot move)
//     are the operator's view; HasState tells whether a data directory would resume
//     a cluster.
//
// # Lifecycle
//
//  1. Open with a stable NodeID (the gateway keeps a UUID in its data directory).
//  2. A node with no raft state and Join unset bootstraps a one-voter cluster of
//     itself; with state it resumes what it had, whatever Join says. The same path
//     serves `make run` (one node) and every node of N.
//  3. A node with Join set and no state waits; the gateway asks any member to Join
//     it, which forwards to the leader. The leader adds it as a non-voter, registers
//     it alive, and its reconcile loop promotes non-voters that have heartbeated to
//     it to voters while there are fewer than 3 (5 past ten members). A non-voter
//     raft cannot reach (a wrong secret, a bad address) is never promoted: as a voter
//     it would count towards the quorum and could stop a small cluster.
//  4. On every leadership gain the new leader issues a Barrier, registers itself,
//     then reconciles every 250 ms, when kicked, or when a member's L + δ runs out:
//     members silent for L + δ are failed; unassigned partitions (a fresh cluster)
//     are assigned at once; partitions of a member that is down or left move once
//     its lease has run out; partitions that only move to balance onto a new (or
//     returning) member move by handoff, at most RebalanceRate per second, and
//     never while Config.Busy reports work on them; partitions and pinned sandboxes
//     of a draining member move by handoff at the same rate, busy or not; pins
//     with no record under them past Config.OrphanPinGrace are dropped (see Pins);
//     servers gone for Config.DeadServerTimeout leave the raft configuration (see
//     Dead servers).
//  5. Drain marks a member draining; it keeps its lease and serves what it has until
//     each partition is handed off. Remove marks a member left; it is refused
//     heartbeats, its partitions move once its lease has run out (L + δ), and it
//     leaves the raft configuration. A planned stop is Drain, wait for Drained,
//     then Close (and Remove, or open again and Join for a restart).
//  6. Close shuts raft down, waits for the package's goroutines and closes every
//     raft connection and the store.
//
// # Epochs and commands
//
// Every ownership change is a compare-and-set on the epoch the leader read, and the
// new epoch is the raft index of the entry that made it, so epochs grow across
// terms and a decision computed by a deposed leader from an old table is refused in
// Apply (ErrStaleEpoch) on every replica alike. Commands are one type byte and a
// compact varint encoding. Unknown types with the 0x80 bit are skipped, for rolling
// upgrades; any other unknown type stops the replica from applying further (Node.Err)
// rather than letting it diverge silently from newer replicas. Snapshots are the
// same encoding, deterministic (maps in key order): one log gives one byte string.
//
// # Leases and fencing
//
// A node may run a sandbox only while its table gives it the sandbox and it holds a
// valid node lease (Admit). L is Config.LeaseTTL (3 s), δ is Config.LeaseMargin
// (0.5 s); every time below is read from the monotonic clock.
//
//  1. Every L/6 a node that does not lead sends a heartbeat to the raft leader, on a
//     connection to the leader's raft port (the listener routes a connection by its
//     first byte: raft opens with its RPC types, heartbeats with their own). It
//     remembers the send time t. The leader renews its own lease through the log
//     instead (step 6).
//  2. The leader answers "granted" only after a VerifyLeader that began after the
//     heartbeat arrived: a quorum still followed it then. Heartbeats waiting together
//     share one VerifyLeader round, so the cost is one round trip per batch, not per
//     node. The answer carries the index of the leader's table.
//  3. The node waits until its replica has applied that index and, holding no valid
//     lease, every write committed before (a sync through the leader: the index covers
//     the tables only), then sets its lease to t + L. OnLease and OnFence follow the
//     lease; Admit reads the clock itself, so it never admits late.
//  4. The leader remembers when each member's last granted heartbeat arrived. A member
//     silent for L + δ is failed: one raft entry marks it down and moves its
//     partitions to the alive members, each move a compare-and-set on the epoch it
//     read (a stale leader's entry is refused in Apply). Partitions of members that
//     are down or left for another reason, and their pins, also wait until the
//     member has been silent for L + δ. A down member that heartbeats again is marked
//     alive and gets partitions back only through the rate-limited rebalance.
//  5. A new leader knows nobody's heartbeats, so it counts every member as heard at
//     the moment it became leader: nothing moves for its first L + δ; except the
//     previous leader, whose lease renewals are in the log (step 6).
//  6. The leader's own lease: every L/3 the leader commits a lease entry naming
//     itself (cmdLeaderLease, ignorable by older versions), remembering when it
//     submitted it, t; once the entry is applied its lease runs to t + L. A new
//     leader commits one after its Barrier and grants no heartbeat, its own
//     included, before that one has committed. Every replica notes, outside the
//     replicated state, the last lease entry it applied: the leader's id, the
//     entry's term and index, and when it applied it (its monotonic clock). A new
//     leader, after its Barrier, looks at that note: if it names another member
//     and no entry of a term between the note's and its own is in its log, it
//     counts that member as heard when it applied the entry instead of at its own
//     start (but no earlier than L/2 + δ before it is ready, so that a previous
//     leader that lost an election but lives has L/2 to heartbeat to it; at the
//     defaults an election is shorter than that, and the floor is the entry's
//     apply). A member that heartbeats before the new leader is ready is not granted
//     but counts as heard, which only delays moves. If it names this node itself, under the same condition, and this node
//     kept the liveness record of its leadership of that term, the new leadership
//     takes the record up (start, floors and grants). Otherwise it waits from its
//     own start, as before. A restored snapshot, or an entry it cannot decode,
//     clears the note.
//
// Why two nodes never admit one sandbox at once, given clocks whose rates differ by
// much less than δ/L. Say the leader moves partition p from A to B.
//   - The move happens at least L + δ after the arrival of A's last granted heartbeat
//     at that leader, and that heartbeat was sent before it arrived, so A's lease
//     (send + L) ended at least δ earlier. Heartbeats granted by earlier leaders were
//     confirmed by a quorum after they arrived; the current leader was elected by a
//     quorum that overlaps that one, so after every such grant; so those leases end
//     before the leader's start + L, and it moves nothing until its start + L + δ.
//   - While the fail entry of A is being committed, A's heartbeats are not granted,
//     and a member that is not alive and still owns something is not granted either,
//     so a lease renewed after the move comes with an index at or after the move, and
//     A renews only once its own table says it no longer owns p. Without this, a node
//     cut off and reconnected could renew its lease before its replica caught up and
//     serve a partition it lost while away.
//   - A grant also waits for the new leader's Barrier: the index it carries then
//     covers every entry of earlier terms.
//
// Why a new leader may count the previous leader O from its last lease entry e (step
// 6). Every lease O holds began at one of these instants, and each is no later than
// the new leader's apply of e, call it a:
//   - O's own renewals. O's lease from an entry begins when O submitted it, before
//     any replica received it, and a replica applies an entry only after receiving
//     it. O extends its lease only from entries that committed in its term, and
//     every committed entry is in the new leader's log (raft's election rule) and
//     applied by its Barrier; e is the last of them, so the others came before it.
//   - Grants O had as a follower of an earlier leader, before it led: confirmed by a
//     quorum before O's election (see above), so before O submitted its first
//     lease entry.
//   - Grants by a leader after O's term: none. Such a leader commits its Barrier and
//     then its own lease entry before it grants anything, so its entries, of a term
//     after e's, would be in the log after e; the new leader checks that there are
//     none. It checks entries of any kind, not only lease entries, so that a leader
//     of an older version (which grants after its Barrier without a lease entry)
//     during a rolling upgrade is not missed.
//
// So every lease O holds ends by a + L, clock drift aside, and the new leader moves
// O's partitions only after a + L + δ. The note is local, never replicated, so a
// replica that installed a snapshot (which may hold lease entries it never applied)
// clears it; and a replica that stopped applying (Node.Err) still notes lease
// entries, since a stale note would count from too early. The same argument covers
// a leadership that takes up this node's own earlier record: that record bounds
// every lease granted up to that leadership's end (every grant is recorded under the
// lock that ending it takes), and nobody granted since. Fencing in the store is
// unchanged: a move is still a new epoch, and an old owner's writes are refused once
// it applies. A paused leader is no different from a paused follower: its lease
// lapses at t + L whether or not it runs, and each sandbox's init holds the same
// deadline (see below), so its processes freeze or die by then.
//
// What leases cannot cover: a process paused between its check and its write. Writes
// carry Epoch, and the store refuses a batch whose epoch is not the partition's
// current one (see Sandbox records). A server that is frozen cannot run OnFence
// either; the sandbox's own init must hold the lease deadline (gateway and runtime).
//
// Failover figures (3 nodes on loopback under -race on a shared 2-core machine,
// L = 300 ms, δ = 100 ms, raft at 0.1×; TestKilledOwnerFailover and
// TestLeaderKilledLeasesHold): an owner closed → a survivor admits one of its
// sandboxes after 0.42 s, median of five (0.40-0.48 s): L + δ counted from its last
// heartbeat, which is up to L/6 older than the kill, plus a commit. At the defaults
// that is 3.0-3.5 s plus a commit. A killed leader is replaced in 0.09-0.12 s here
// (about 1 s at the defaults), well inside L, so owners keep their leases through it.
// With real processes at the defaults (BenchmarkFailover in internal/clustertest,
// medians of five): a killed leader that owned a sandbox → the sandbox answers on a
// survivor after 2.99 s (renewals every L/3; 3.35-3.50 s with renewals every L/6),
// against 4.75-5.00 s when a new leader counted from its own election (the build
// before, in the same runs); the new leader is ready after 1.0-1.3 s and moves the
// dead leader's partitions 2.6-3.5 s after the kill. A killed owner that did not
// lead: 3.2-3.3 s, unchanged.
//
// # Sandbox records
//
// The actors' durable state (actor.Storage, adapted by the gateway) lives here, so a
// sandbox's records survive the loss of its owner: small records under byte keys,
// written as Batches.
//
//  1. Fencing. A batch carries the epoch its writer was admitted with (Node.Epoch),
//     and Apply accepts it only if that is the current epoch of the sandbox's
//     partition (or of its pin) in the tables as of the batch's entry; otherwise
//     ErrFenced, for that batch alone, decided alike on every replica. Equality,
//     not "at least the highest epoch this sandbox accepted": a zombie owner's
//     write would pass that test until the new owner happened to write. An
//     unowned partition accepts nothing. Nothing in Apply reads a clock: a
//     deadline in a record is stamped by the writer.
//  2. Group commit. Concurrent Writes on a node share one raft entry (cmdBatches):
//     batches queue while up to two groups are in flight, so groups grow with the
//     load, and each batch gets its own verdict. A node that does not lead sends
//     its groups to the leader over the cluster listener (a connection opening with
//     its own first byte, pooled, every call bounded); the leader applies them as
//     they came. A replica judges each entry at once (verdicts, tables), entries
//     raft hands over together in one call (raft.BatchingFSM), and leaves the
//     records to the state file's writer goroutine, which lingers up to 30 ms and
//     writes all it has in one transaction, so the leader's commit does not wait for
//     its file and a file write carries many entries. The file lags the tables only
//     across batch entries: any other command, a snapshot and Node.sync wait for
//     the writer first (store_writer.go).
//  3. Reads. Read serves one sandbox from this node's replica. A follower learns
//     that an entry committed only with the leader's next append, up to
//     CommitTimeout later, so an owner that does not lead would not see its own
//     last write; it keeps an overlay of its acknowledged batches (with their raft
//     index) until its replica applies them, and Read merges the overlay over one
//     read transaction of the file, keeping only the batches above the index that
//     transaction holds. An owner never waits for its replica on the request path.
//     Reads of sandboxes owned elsewhere are replica reads, possibly a little old.
//     A Read of one key and a 20-record scan takes 2.6 µs from the file alone and
//     7.6 µs with 8 batches pending in the overlay (BenchmarkStoreRead).
//  4. Unknown outcomes. A batch that reached a leader which then lost leadership,
//     shut down or stopped answering may or may not commit: Write says so
//     (ErrIndeterminate). Failures that certainly applied nothing (no leader yet,
//     a node that turned out not to lead) are retried for up to 5 s first. The
//     actor does not retry a failed write: it drops the activation and reloads
//     from the store, and the first Read of the sandbox after an unknown outcome
//     commits an empty entry through the leader and waits for the replica to
//     apply it, so the reload sees whether the batch landed; it is never applied
//     twice. A caller that retries must send only batches safe to apply twice (the
//     gateway's adapter hands the outcome to the actor as its ErrIndeterminate).
//
// Durability: one sync per commit, the raft log's fdatasync; state.db is bbolt with
// NoSync, and each of its transactions writes the index of its last cmdBatches entry
// with the entries' records. Raft replays the log after its latest snapshot at
// every start; entries at or below the file's index are skipped (their verdicts
// are recomputed from the tables, which are rebuilt from the log, but the file is
// not touched), and Restore keeps the file when it already holds at least the
// snapshot's index, since both are prefixes of the same committed log. Keeping the
// file, rather than rebuilding it from the snapshot and the log at every start, makes
// a restart cost a replay of the log tail instead of a copy of the whole state, and
// it is exact after a process crash (kill -9): the kernel keeps every page bbolt
// wrote. It is not after an OS crash or power loss, which can tear a NoSync file, so
// the file records the boot id of the machine that opened it and whether it was
// closed: a file left open by an earlier boot is removed at Open, and raft rebuilds
// it from its latest snapshot and the log (Restore takes any snapshot into an empty
// file). Without a boot id (not Linux) every unclean stop is treated so.
//
// Snapshots stream: Snapshot opens a read transaction; Persist writes the encoded
// tables, the file's index and size, then the file itself with bbolt's Tx.WriteTo,
// page by page. Restore copies the file beside the live one, checks its length,
// syncs and renames it over. The file is mapped 256 MiB up front because bbolt
// grows its map only when no read transaction is open, and a snapshot's is long.
// Measured with 100,000 sandboxes of five records (about 1 KiB of values each),
// BenchmarkStoreSnapshot on a loaded 2-core VM: a 204 MiB snapshot in 0.25 s,
// restored in 0.31 s, with 0.15 MiB allocated while persisting.
//
// Write figures (BenchmarkStoreWrite: three nodes in one process on a shared 2-core
// VM, raft at default timeouts, a 200-byte and a 64-byte record per batch; more in
// BENCHMARKS.md). The WAL syncs once per append where bbolt synced twice, and the
// FSM applies the entries raft hands over together and writes its state file
// behind. Against the build before both, alternating, on the quiet VM: one writer's
// p50 0.27 ms (was 0.64-0.72), 64 writers on the leader 37,800-40,600 batches/s at
// p50 1.1-1.3 ms (was 8,400-13,100/s), 29-49 µs of CPU per batch over the three
// replicas. Under heavy load (load average 15-20) 64 writers fell to 3,200-11,700/s:
// a commit is then bound by goroutine hand-offs on a busy run queue.
//
// The write ceiling of one raft group is one leader's commit pipeline: every batch of
// the cluster goes through one log, one leader's fsync and one state file per
// replica. Group commit makes the cost per entry, not per batch, so the ceiling is
// set by entries per second (a few thousand with the WAL on this VM's disk, more on
// faster disks) times batches per entry. Past it, the path is several raft groups,
// each owning a range of partitions (a multi-raft like CockroachDB's or TiKV's): the
// partition table already names each sandbox's partition, so a range of partitions
// can move to a group of its own, with its own leader on another node, its own log
// and its own state file, and the writes of different ranges commit in parallel.
// Membership and placement would stay in a small meta group.
//
// # Planned moves: handoff and drain
//
// A partition whose owner is alive (or draining) moves in two phases, so that the
// old owner stops before the new one starts, instead of one compare-and-set that the
// two replicas apply at different times:
//
//  1. The leader commits BeginHandoff{p, from, to, expected epoch}: the partition's
//     state becomes handoff with Next = to, Owner stays from, and its epoch becomes
//     the entry's index. From then on Admit refuses the partition's sandboxes on
//     every node that has applied it (ErrHandoff: the gateway holds the request),
//     and Owner reports no owner. The store still accepts batches of its sandboxes
//     stamped with the epoch before the handoff (Assignment.Prev: the old owner's
//     activations were loaded at it) or with the handoff's own (Handoff.Epoch),
//     so the old owner's last writes (passivation) land; nobody else is admitted
//     to write then, and the entry that ends the handoff moves the epoch past both.
//  2. The old owner sees the handoff in its own table (only while it holds a lease:
//     a table being replayed after a restart shows handoffs long over), calls
//     Config.OnHandoff (stop the actors, close their WebSockets with 1012, send the
//     workspace), and when it returns reports to the leader on a connection of its
//     own to the leader's raft port (authenticated like every connection there, see
//     Node authentication), again while the handoff lasts until the leader takes it.
//  3. The leader commits CompleteHandoff{p, expected epoch}: Owner = Next, state
//     active, epoch = the entry's index. The new owner admits once it applies it
//     (it activates lazily, on the first request).
//  4. If no report comes (the old owner is dead, partitioned, or still stopping),
//     the leader completes the handoff once L + δ have passed since it first saw
//     the BeginHandoff applied in its own table, and not before its own leadership
//     is L + δ old. If the target is no longer alive, AbortHandoff gives the
//     partition back to its old owner (a new epoch), and the plan moves it again.
//
// Why the old and the new owner never admit at once. The new owner admits only
// after it applies CompleteHandoff. With a report: the old owner reports only after
// its own table has the BeginHandoff, and from then on its Admit refuses the
// partition (its table only moves forward). Without one: a lease granted after the
// leader applied the BeginHandoff carries an index at or past it, so the old owner
// renews only once its table refuses the partition; every lease granted before
// that was asked for before the leader's first sight of the handoff and has ended
// by then + L; leases granted by earlier leaders end before the current leadership
// is L old (see Leases and fencing). Every step is a compare-and-set on the epoch,
// so a deposed leader's BeginHandoff, CompleteHandoff or AbortHandoff computed from
// an old table is refused on every replica, and a repeated report finds the handoff
// over and does nothing. Plain assignments refuse a partition in handoff: only
// CompleteHandoff or AbortHandoff end one.
//
// Drain uses the same handoffs: the draining member is not alive for placement, so
// the plan moves each of its partitions to its rendezvous owner among the alive
// members, within RebalanceRate, idle ones first and busy ones after them. It stays
// a member that heartbeats (its grants are not held back like a down member's),
// fails like any member if it goes silent, and owns nothing once drained.
//
// Pinned sandboxes of a draining member move the same way, one pin at a time in the
// table (pindrain.go): cmdPinMove begins a pin's handoff to the member its selector
// picks among the alive ones (Handoff.Sandboxes tells the old owner), and completes
// or aborts it by the same rules as a partition's, with the same write epochs (the
// pin's Prev and handoff epoch). A pin no alive member matches stays and keeps being
// served; Drained does not wait for it and Unmovable names it, so a drain never
// hangs on a pool with no other member.
//
// # Pins
//
// A pin (Pin) places one sandbox on a member matching a label selector, overriding
// its partition. The first sandbox batch accepted under a pin marks it written, in
// Apply, so every replica agrees on it. A pin that is not written belongs to a create
// that has not (or never) written its record: DropPin removes it on the gateway's
// failure path, and the leader removes any it has seen unwritten, at one epoch, for
// Config.OrphanPinGrace (pinsweep.go). Apply refuses to drop a written pin, and a
// create whose first write comes after the drop is fenced. Pins in a snapshot of a
// version before the mark count as written.
//
// Deleting a pinned sandbox drops its pin in the same log entry as its records:
// Apply, accepting the delete batch at the active pin's epoch, removes the pin too,
// so no crash falls between the two and a zombie owner's delete is fenced. Such a
// group is command 13 (cmdBatchesDrop; snapshots stay v5), and a re-create pins
// afresh. The leader's sweep also drops written pins whose records are gone
// otherwise, past the grace (pindelete.go, pinsweep.go).
//
// # Dead servers
//
// The leader removes a raft server that has been down (or left, by a removal cut
// short between its two steps) and silent for Config.DeadServerTimeout (10
// minutes) from the configuration and marks it left: a non-voter at once, a voter
// only while the remaining voters keep a healthy majority and the voter target can
// be kept (more voters than the target, or a healthy non-voter to promote in its
// place). This is raft-autopilot's CleanupDeadServers rule on this package's own
// failure detector; cleanup.go says why autopilot itself is not used.
//
// Handoff figures (3 nodes on loopback under -race on a shared 2-core machine,
// L = 300 ms, raft at 0.1×; TestHandoffReported, TestDrainUnderLoad): one partition
// with a hook that returns at once, BeginHandoff applied on the first replica →
// CompleteHandoff applied on the target, 10-80 ms, medians of eight 19-56 ms over
// runs (two commits and the report's round trip). A drain of one member's 1331-1343 partitions (a
// quarter busy) at RebalanceRate 1000 took 1.4-1.7 s, which is the rate: at the
// default 64 per second it is about 21 s.
//
// # Caveats (not done yet)
//
//   - A pin moves by handoff only in a drain; a member down or left past its lease
//     loses its pins by one compare-and-set, as its partitions do.
//   - Config.Busy and OnHandoff see only this node: the leader asks Busy about
//     every partition, so until the gateway shares how busy each node is, Busy on
//     the leader knows only the leader's own work.
//   - An unreported handoff waits L + δ from each new leadership: under frequent
//     elections (a loaded host at small timeouts) it completes late, never early.
//   - Pure rendezvous balances like random draws: max/mean load is about 1.04-1.06 at
//     3-5 members but grows with the member count (1.15 at 10, 1.37 at 100 members
//     in this package's tests). Bounded-load rendezvous is the fix for large clusters.
//   - One raft group carries every write; see Sandbox records for its ceiling and
//     the path past it.
//   - Promotion and dead-server cleanup are the reconcile loop's (no raft-autopilot:
//     see cleanup.go), with no stability wait before a promotion.
//
// # Addresses: listen and advertise
//
// The raft listener binds Config.RaftListen, which may be 0.0.0.0 or [::]; peers
// are told Config.RaftAdvertise (what the transport's Addr returns, so what raft
// records in its configuration and Node.Self puts in the member table). An empty
// one is chosen by AdvertiseAddr (advertise.go) once the listener is bound: the
// listen address when it names a host, else the host's first non-loopback unicast
// address with the bound port. A node never advertises an unspecified address:
// peers dialling it would dial themselves. Config.HTTPAddr follows the same rules,
// applied by the gateway.
//
// # Node authentication and its threat model
//
// Every connection on the raft listener, raft, heartbeats, batch RPCs and handoff
// reports alike, starts with a challenge-response on Config.Secret
// (auth.go): each side sends a fresh 32-byte nonce and proves the secret with an
// HMAC-SHA256 over both nonces and its role, compared in constant time, within 5 s.
// Only then is the first byte read and the connection routed. A connection that
// fails is closed, counted (RejectedConns) and logged at most once a minute per
// source. Dialers check the acceptor too, so raft never talks to an impostor.
//
// What it stops: anyone who can reach the raft port but does not hold the secret
// can neither read the cluster's state, nor append, vote, heartbeat or take a
// lease. What it does not: the traffic after the handshake is neither encrypted nor
// integrity-protected, so an attacker on the path between two nodes can read it or
// hijack an authenticated TCP connection. Run the raft port on a private network
// (or a VPN such as WireGuard) where that matters; TLS on this listener is the next
// step. The secret is made by the gateway at bootstrap, kept in its data directory
// (0600) and handed to a joining node over its admin-authenticated HTTP API, so
// holding an admin API token is as good as holding the secret (an admin may add
// nodes anyway).
//
// # Deviations from the design notes, with reasons
//
//   - The raft log is our own write-ahead log (wal.go; design, crash rules and
//     figures in docs/raftlog.md), not hashicorp/raft-boltdb: a bbolt commit syncs
//     twice (pages, meta), and a commit waits on the leader's append then a
//     follower's, four syncs in series. The WAL syncs once per append.
//     hashicorp/raft-wal does too but drags in coreos/etcd v3.3 +incompatible, and
//     raft-boltdb v1 sits on the archived boltdb/bolt (aborts under checkptr). The
//     bbolt store (logstore.go) stays to migrate an older raft.db at Open and as
//     the benchmarks' baseline.
//   - The raft stream layer is ours (transport.go) so that Close also closes accepted
//     and pooled connections, which raft's TCP transport leaves to the peers.
//   - Config.Multiplier is a float so tests can run the 500 ms profile at 0.1×.
//   - A heartbeat grant carries the leader's table index and the node renews only
//     once its replica has reached it (see above); the design notes did not say.
//   - A leader renews its own lease by committing a log entry every L/3 rather than
//     by a heartbeat to itself, and a new leader counts the previous leader from the
//     last such entry rather than from its own election (Leases and fencing, step
//     6): the failover of a leader that owned sandboxes no longer adds an election to
//     L + δ. It costs one log entry a second per cluster at the defaults.
//   - One VerifyLeader round serves every heartbeat waiting when it starts, instead
//     of one round per 100 ms: the batch is as large as the load makes it, and an
//     idle leader answers at once.
//   - Remove used to move a member's partitions at once; they now wait for its lease,
//     since the removed node may still be running.
//   - The store accepts a batch only at the partition's current epoch, where the
//     design notes said "at least the stored epoch": see Sandbox records, step 1.
//   - BeginHandoff sets the epoch too (the notes only had CompleteHandoff set it):
//     the epoch then names the handoff, so a report, a completion or an abort meant
//     for one handoff cannot apply to a later one of the same partition, and the old
//     owner's passivation writes carry it.
//   - The old owner reports a handoff on its own connection to the leader's raft
//     port rather than by a command it cannot apply (only the leader applies), so
//     the gateway need not forward it; a leader of an older version drops the
//     connection, and the handoff completes after L + δ.
//   - A draining member stays in the member table with status draining until
//     Remove; Join makes it alive again.
//   - A removed node's raft stays a follower outside the configuration (it starts
//     no elections) until Close, instead of shutting itself down: raft leaves a
//     VerifyLeader in flight unanswered when it shuts down, and Close waits for
//     those before it stops raft.
package cluster
