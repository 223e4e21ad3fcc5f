// Package runtime starts, watches and kills the process trees of a sandbox: one-shot
// exec, long-lived processes with or without a PTY, output rings, persistent shell
// sessions, terminals and confined workspace file access. It imports nothing of ours.
//
// # Entry points
//
// [New] makes the runtime of one sandbox from a [Config] (workspace directory, env,
// limits, [Driver]). On the [Sandbox]:
//
//   - [Sandbox.Exec] runs one command to completion and returns its stdout, stderr and
//     exit code, byte-exact and capped.
//   - [Sandbox.Start] and [Sandbox.StartTerminal] start long-lived [Process]es on pipes or
//     a PTY; [Process.Subscribe] follows their output from any offset still buffered.
//   - [Sandbox.Close] kills everything and waits.
//
// # Drivers
//
// The [Driver] decides where processes run. [LocalDriver] starts them as children of
// the server, on the host, as its user. [NamespaceDriver] gives each sandbox a small
// init (runtime/internal/nsinit: this binary re-executed) holding new pid, mount, uts,
// ipc and network namespaces, optionally a user namespace, a read-only root and the
// workspace at /workspace; every exec, process, terminal and session shell is forked
// by that init, and pids and cwds in results are the ones inside. [ProbeNamespace]
// says whether the namespace driver works on a machine. Both drivers share everything
// below: the init kills what a leader left in its group before reaping it, as the
// server does for its own children, and places each tree's leader in its cgroup.
//
// # Process trees
//
// Every process is the leader of its own process group (a PTY process leads a new
// session), so one signal to the group reaches the whole tree. When a leader exits,
// whatever it left in its group (and, for a PTY, its session) is killed with SIGKILL
// before the leader is reaped, so a recycled pid is never signalled. Kill sends SIGTERM,
// then SIGKILL after Config.KillGrace.
//
// # Cgroups
//
// Where the machine has a writable cgroup2 hierarchy (pure v2, or the unified one of a
// hybrid layout; [Containment] says which is in use), each sandbox has a group,
// <own>/sandgate-<Config.Scope>/<Config.ID>.<random> under the server's own group, and
// each process tree (exec, process, terminal, session shell) a child group of its own.
// The leader is cloned straight into it (clone3 with CLONE_INTO_CGROUP), so every
// descendant is in it too, even one that calls setsid or double-forks: every SIGKILL of
// a tree (timeout, exit of an exec's main process or a process's leader, Remove, a
// session's death) is also a cgroup.kill of its group, which is then awaited empty
// (cgroup.events, bounded) and removed; Close does the same to the sandbox's group.
// Without cgroup2, a setsid'd descendant escapes its group, and exec and process output
// readers stop waiting for its copy of stdout after a bounded drain (1 s).
// On the namespace driver the init clones the leader into the group itself; with a
// user namespace the kernel then checks the init's own uid (the namespace's root as
// the host sees it), so the sandbox's group and each tree's group have their
// cgroup.procs chowned to that uid (see the nsinit package's doc, "Spawning", for why
// that is safe); without it each leader would write itself into its group before it
// execs, one more cgroup migration per exec.
//
// The limits ([Config] MemoryBytes, Pids, CPUMillis; [Sandbox.SetLimits]) go to the
// sandbox's group in the cgroup v1 memory, pids and cpu hierarchies where those are
// mounted (else to the v2 group, where the controllers are enabled), and [Sandbox.Usage]
// reads them. clone3 cannot place a process in a v1 group, so each leader's pid is
// written there right after it started: a window of microseconds (milliseconds on a
// loaded machine) in which it runs, and may fork, outside the limits. On the namespace
// driver the window is closed: the init is placed in the v1 groups before it runs
// anything, and every process it forks inherits them. An OOM kills inside the
// sandbox only (the v1 OOM killer picks its victim in the group).
//
// The sandbox's primary group stays flock'd while the sandbox lives. [Sweep], run once
// at a server's start, kills and removes every unlocked group of its scope, the
// leftovers of a run that crashed, and says which sandboxes had some. A process inside
// a sandbox runs as the server's user and could still move itself out of its group by
// writing to cgroup.procs; the namespace driver's read-only /sys and cgroup namespace
// close that.
//
// # Fencing
//
// A cluster node may run its sandboxes only while it holds its node lease, and a
// server that is stopped (a long GC pause, SIGSTOP, a stalled VM) cannot stop them
// when that lease runs out. With [NamespaceDriver].Lease set, each sandbox's init holds
// the lease itself:
//
//  1. The gateway calls [Lease.Extend] each time the node's lease is renewed; each
//     extension goes to every sandbox's init as one small frame, in the background
//     (coalesced, and never waiting for a slow or dead init).
//  2. The deadline is an absolute CLOCK_BOOTTIME time, read alike by every process of
//     the host. CLOCK_MONOTONIC would do the same but stops while the machine is
//     suspended: a host that slept through its lease would run on after waking for
//     the time it slept, while its peers had moved its sandboxes long before.
//  3. When the deadline passes the init freezes the sandbox's processes (cgroup2
//     cgroup.freeze) within milliseconds, even if the server is stopped. Every
//     process tree's group then lies below one freeze group of the sandbox,
//     <sandbox>/trees/t<n>, so setsid daemons stop too; the init's own group is
//     beside it, so the init keeps running to hear a renewal. Where the kernel has
//     no freezer (before 5.2) the init kills them instead. It logs which.
//  4. Meanwhile [Sandbox.Exec], [Sandbox.Start], [Sandbox.StartTerminal],
//     [Sandbox.NewSession] and [Session.Exec] fail with ErrLeaseExpired; a sandbox
//     made under an expired lease (a new Lease is expired until its first Extend)
//     runs nothing. An Extend that moves the deadline into the future thaws it.
//  5. A frozen process still dies by SIGKILL and cgroup.kill, so Kill, exec and
//     process timeouts and Close end a frozen sandbox as they end any other: a
//     command that was running when the freeze came ends at its timeout; a process
//     that ignores SIGTERM is killed after KillGrace.
//
// Without a Lease nothing is ever frozen. The local driver has no init and no lease.
//
// # Output
//
// Each process has a ring of Config.OutputBufferBytes, allocated lazily as output
// arrives. Every output byte has an absolute offset; each chunk is tagged with its
// stream. Subscribers read from the ring themselves, woken by the writer. A plain
// subscriber never blocks the process or other subscribers: one that falls behind gets a
// gap event with the exact range it missed. A holding subscriber
// ([SubscribeOptions].Hold, for a live WebSocket or SSE reader) is never skipped while it
// keeps reading: when it is a whole ring behind, the output reader stops reading the
// PTY or pipe, so the process blocks in its writes as on a terminal, until it reads on.
// One that takes nothing for its HoldBound (default 5 s) while the process waits stops
// holding, and gets a gap when it reads again. A PTY master is read to EIO after the
// child exits and pipes to EOF before the exit event is published, so no tail output is
// lost; the bounded drain after an exit does not count time spent waiting for holders.
//
// # Text positions of a PTY
//
// A terminal client such as OpenCode's resumes by a cursor counted in UTF-16 code units
// of the text it was sent (it adds each text frame's JavaScript length), while the ring
// counts bytes. A PTY process's ring therefore keeps a text index: [Process.TextStart],
// [Process.TextEnd], [Process.TextSeek] and [Process.TextAt] map between the two, as a
// [TextPos] (a byte offset and the units before it), and a [TextEncoder] turns the bytes
// read from such a position into the very text the index counted. A
// [TextSubscription] ([Process.SubscribeText]) reads output cut at unit boundaries,
// with the units the index counted and whether the bytes are their own text, so a
// stream of valid UTF-8 is forwarded without being decoded again. The rule, one
// decoder shared by all:
//
//  1. A complete, valid UTF-8 sequence is itself: one unit, or two for a rune above
//     U+FFFF (a surrogate pair).
//  2. Every byte of anything else (stray continuation bytes, overlong forms, encoded
//     surrogates, C0, C1, F5–FF, a lead byte that is not continued) is one U+FFFD, one
//     unit. This is how Go's utf8.DecodeRune and a range over a string read bytes, so
//     the text is always valid UTF-8 and never depends on where a read was cut.
//  3. A valid sequence still incomplete at the end of the output is held back; TextEnd
//     stops before it. At the exit its bytes count as one U+FFFD each.
//
// Positions are unit boundaries: a reader starting at one and adding up the units of
// what it encoded is always at the index's count. A count inside a surrogate pair seeks
// to the boundary before its rune. Counts are absolute from the first output byte:
// the index counts each byte as the ring appends it, under the ring's lock, whether or
// not anyone reads it, and keeps a mark (a TextPos) at
// the first boundary after every 2 KiB, so a seek decodes at most about 2 KiB of the
// ring; marks older than the ring's oldest byte are dropped with it.
//
// The oldest position is found without keeping the bytes the ring dropped: a byte that
// is not a continuation byte always starts a character, and so does the fourth of four
// continuation bytes in a row, so TextStart is at most 3 bytes after the ring's oldest
// byte (continuation bytes there may belong to a character whose first byte is gone),
// and its count is the next mark's less the units decoded between.
//
// Counting is the cost of every PTY byte, so it has a fast path: where the CPU has
// AVX2, whole 32-byte blocks are proven valid UTF-8 at once (Keiser and Lemire's
// validation by table lookups, text_bulk_amd64.s) and counted as 32 less their
// continuation bytes plus their 4-byte leads, about 6 GiB/s of mixed terminal output
// against 1 for the table loop; the table loop decodes only the blocks that are not
// valid, the sequence a block boundary cuts, and short tails. TestTextFastPath and
// FuzzTextFastPath hold the two to the same text and counts. Processes on pipes
// keep no index ([ErrNoText]): their output has two streams, and no client counts it
// as text.
//
// # Caveats
//
//   - File descriptors: everything the package opens is O_CLOEXEC, and [New] also marks
//     every fd above 2 that the gateway inherited from its own parent close-on-exec
//     (once per process), so a child sees only 0, 1 and 2.
//   - A busy output reader waits in poll(2) on its own thread while data flows and
//     returns to Go's netpoller after 20 ms without output, so idle processes cost no
//     thread (see readOutput for the measurement behind it).
//   - An exec waits for its two output pipes and its exit on one epoll instance, whose
//     fd waits in Go's netpoller: one parked goroutine per exec and no thread. A
//     sandbox keeps the emptied instances for its next execs and closes them in
//     [Sandbox.Close]; a stream's pipe is taken out of the instance before it is
//     closed, because a fork in progress elsewhere in the process holds a copy of
//     every fd until its child executes (exec_poll_linux.go).
//   - Input never hangs: [Process.Write] and [Process.WriteContext] give up with
//     ErrInputBlocked when the process does not take its input in time (it is not
//     reading, or its terminal output is stopped with ^S), one writer at a time.
//   - The package is named like the standard library's runtime; import that one as
//     goruntime.
package runtime
