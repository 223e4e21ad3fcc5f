// Package nsinit runs one small init per sandbox, holding the sandbox's pid, mount,
// uts, ipc and network namespaces, and spawns every sandbox process from inside them.
// A Go process cannot setns into a mount namespace, so the server cannot start a
// process in a sandbox by itself: it asks the sandbox's init over a socket, and start,
// wait, exit status, signals, stdio and PTY fds and pids cross that boundary.
//
// # Entry points
//
//   - [Start] re-executes the running binary as an init and waits until the sandbox
//     is set up. Any binary that links this package becomes the init when so
//     re-executed: the package's init function runs [Main] before the program's
//     own main (or a test binary's TestMain) could run.
//   - [Init.Spawn] starts a process inside with pipes or a PTY slave as its stdio, in
//     a new process group or session; [Child] gives its inner and host pids, Wait and
//     Signal (to its process group).
//   - [Init.Renew] extends the lease of an init started with one (see Leases).
//   - [Init.Close] ends the sandbox: everything inside is killed, setsid daemons too.
//
// # The sandbox
//
// In new pid, mount, uts, ipc and (unless [NetworkHost]) network namespaces the init
// builds a tmpfs root with read-only binds of the host's /usr, /etc, /opt and its bin,
// sbin and lib* links (or of the entries of [Config].Rootfs), a fresh /proc with
// /proc/sys read-only, tmpfs /tmp and /dev/shm, a /dev with null, zero, full, random,
// urandom, tty and a new devpts instance, and the workspace read-write at /workspace;
// it sets the hostname to the sandbox id, brings lo up ([NetworkLoopback]) or leaves
// it down ([NetworkNone]), pivots into the new root and remounts it read-only.
//
// Every spawned process is started from one hardened thread of the init: no_new_privs,
// an empty capability bounding set (so root inside has no capabilities), and a seccomp
// filter that fails keyctl, bpf, ptrace, perf_event_open, mount and the new mount API,
// unshare, setns, clone into new namespaces, module and kexec calls, reboot, swap,
// acct, clock setting and a few more with EPERM (clone3 with ENOSYS, so libc falls
// back to clone, whose flags the filter can see). Processes run as root inside unless
// [Config].UID and GID are set. How the thread starts them is under Spawning.
//
// That thread also reads the control socket, blocking in recvmsg outside Go's poller,
// so a spawn request wakes the very thread that forks it; another thread waits in
// waitid for exits rather than for SIGCHLD through Go's signal handling. Each cut a
// wake-up (tens of microseconds on a busy machine) from every exec. Both hold a thread
// while they wait, so before it is ready the init makes a few spare idle threads: its
// thread count, which its pids group counts with the sandbox's processes, then stays
// what it was at start instead of growing by one at some later spawn. Go also counts
// each of them as holding a P while it waits; the init runs with one P more than those
// two (GOMAXPROCS 3, whatever the host's CPUs), because with every P held so Go's
// monitor thread takes them back every 20 µs and never backs off: four to six
// wake-ups per exec under load, a fifth to a quarter of the init's CPU. waitid fails
// at once when the init has no child, as it mostly has between execs of a short
// command; the reaper then waits for the next fork in read(2) on an eventfd, which
// the spawner writes only when the reaper says it waits, so the wake-up is the
// kernel's, straight to the reaper's thread.
//
// Three more things keep the init's threads asleep between spawns (BENCHMARKS.md,
// "#14, eighth pass"). SIGCHLD stays at its default disposition (uncatchChildSignal):
// Go would otherwise catch it, and every exit would interrupt one of the init's
// threads to run a handler that drops it. The spawner and the reaper pass through
// Go's scheduler every few milliseconds while they work (schedYield): neither ever
// parks, so Go's monitor thread counted them as running too long, took their Ps from
// their syscalls, and started polling every 20 µs again each time. And the reaper
// reports and reaps an exit outside the init's lock, which a spawn takes twice.
//
// # Spawning
//
// The init starts processes on a path of its own where it can ([SpawnCloneInto]),
// and on Go's syscall.ForkExec otherwise ([SpawnFork]); [Init.SpawnPath] says which.
//
// The own path (clone_linux_amd64.c, cgo on amd64) is one clone3 with
//
//   - CLONE_INTO_CGROUP: the kernel puts the child in its tree's cgroup2 group
//     ([SpawnRequest].CgroupDir) as it creates it. On the fallback path the init
//     writes itself into that group, forks, and writes itself back: two migrations
//     of the whole init per exec, each interrupting every one of its threads, which
//     were about 68 µs of CPU, 30% of the init's, under eight clients (BENCHMARKS.md,
//     "#14, third pass");
//   - CLONE_CLEAR_SIGHAND: the child starts with default handlers, where Go's child
//     resets each of some 55 signals with a syscall before it execs;
//   - CLONE_PIDFD, for [Child].ExitFD;
//   - CLONE_VM|CLONE_VFORK on a stack of its own (one mapping with a guard page below
//     it, reused: the spawns are serialized on the spawner thread, and each child has
//     left it, by exec or exit, before clone3 returns); or, for a spawn that needs no
//     answer ([SpawnRequest].NoWait: the runtime's exec), CLONE_VM without
//     CLONE_VFORK, below ("Spawns that are not waited for").
//
// The thread blocks every signal around the clone (no handler may run in a child that
// shares its memory). The child runs C with raw syscalls only (no libc: errno and
// libc's locks would be the parent's) and does, in order, what Go's child does for
// the same request: its seccomp filter (below), setsid or setpgid, setgroups, setgid
// and setuid when Config.UID or GID are set, chdir, the fds moved into 0..n-1 (those
// in the way moved up first; the targets lose close-on-exec, everything else of the
// init has it), TIOCSCTTY for a PTY, RLIMIT_NOFILE back to what the process started
// with (Go raises its soft limit at start; a C constructor reads it before), the
// signal mask back, and execve. A failure is stored in the memory it shares with the
// parent (the errno and the step) before it exits 127; the init reaps it and answers
// the spawn with that errno, as ForkExec would (ENOENT, EACCES, ...). The parent of a
// vfork resumes once the exec has passed its point of no return, before the kernel
// closes the close-on-exec fds: a process seen from outside right after its spawn may
// still show the init's fds, though it runs none of its own code until they are gone.
//
// Spawns that are not waited for: with CLONE_VFORK the spawner sleeps until the child
// has exec'd, and the spawns of a sandbox queue behind one another for the child's
// whole way there: waiting for a CPU (the kernel may place the new child on the other,
// busy one while the spawner's goes idle), its own steps, and the exec's until its
// point of no return. Timed in the init under eight clients, that was 300-360 µs of
// each spawn's 350-420 on the spawner thread, which was busy 90% of the time
// (BENCHMARKS.md, "#14, sixth pass"). A NoWait spawn is instead cloned without
// CLONE_VFORK, on a slot of its own (a stack with a guard page, a control page with
// the spawn's arguments, which the child reads and writes its failure into, and an
// area with its strings, pointer arrays and fds; maxAsync of them, mapped as needed
// and reused), with CLONE_CHILD_CLEARTID: the kernel clears a word in the slot when
// the child leaves the memory it shares with the init, by exec or exit, which is
// exactly when CLONE_VFORK would have woken the parent. Everything the child reads
// is in the slot, outside Go's heap, so nothing needs pinning meanwhile. The spawner registers the child and reads the next request at once. A slot is freed by
// the next spawn that finds its word cleared and no failure, or by the reaper: a
// child that failed before its exec has exited 127 with the errno and the step in
// its slot, and the reaper answers it as the spawn's failure (the error frame, and
// the status pipe closed without a status) instead of as an exit. Such a failure
// (chdir, an exec's ENOENT or EACCES) thus comes after the spawn rather than in its
// place, which a NoWait spawn's client cannot tell apart; a program gone from a
// directory the PATH cache remembered fails once rather than being searched for
// again. A child may be signalled before it has made its process group: it then gets
// the signal itself. With every slot in use, a spawn waits for its child as above.
//
// The seccomp filter: the thread cannot carry the filter above, which refuses clone3
// (its flags sit behind a pointer, out of the filter's sight), and it must call
// clone3. It carries the same program with clone3 allowed, which every child inherits
// (a shared reference, nothing to compile), and each child adds a four-instruction
// filter that refuses clone3 with ENOSYS before it execs: the kernel runs every filter
// of a task and takes the most restrictive answer, so a sandbox process sees exactly
// the program above. Loading the whole program in each child instead was measured at
// about a fifth of a spawn of true (the kernel checks, JIT-compiles and pre-evaluates a
// new filter for every syscall number).
//
// The init probes the path once at start, on the spawner thread before it is
// hardened: a clone3 with those flags into its own group, then, if the kernel refuses
// the group (EBADF for a cgroup v1 directory; EACCES where the init may not write the
// group, as in a user namespace whose root the groups were not delegated to), one
// without it ([SpawnClone]: each child then writes itself into its group's
// cgroup.procs, which the server opened, before it execs: a migration of one small
// process rather than two of the init). A probe that fails (a kernel before 5.5, a
// build without cgo or on another architecture, [Config].ForceFork) leaves the
// fallback: ForkExec from the thread carrying the full filter, with the moves. A
// spawn whose group refuses the clone though the init's own group did not is retried
// the [SpawnClone] way.
//
// With [Config].UserNS the kernel checks the init's own credentials (root of its user
// namespace, an unprivileged uid to the host) for CLONE_INTO_CGROUP: write access to
// the target group's cgroup.procs and to that of the common ancestor of the target
// and the init's own group. The runtime therefore chowns the cgroup.procs of the
// sandbox's group and of each tree's group to that uid (see the runtime's doc): it lets
// the uid move processes between that sandbox's own groups and nowhere else, and
// nothing inside a sandbox can reach those files (no /sys, no mount, and the init's
// fds are out of reach through /proc: its processes lack the init's capabilities, so
// the kernel refuses them the ptrace access that asks).
//
// # Memory
//
// A request costs the init no allocation on Go's heap: the spawner decodes it into a
// frame and buffers of its own, reused by the next one, with the strings left in the
// receive buffer (conn.recvReused); ForkExec's arguments are the spawner's too, the
// child's strings and fds go to the slot's area (async) or to buffers the spawner
// keeps (a spawn it waits for), and the frames it sends are encoded, with their
// control data, into buffers of the conn. Without it every spawn left its frame,
// argv and environment behind as garbage, some 50 allocations and 5.5 KiB for an exec
// of the runtime's (TestSpawnsAllocateNothing), and a burst of a few thousand grew
// Go's heap to its goal and made the runtime collect. Collections make metadata the
// runtime keeps for the life of the process (the sets of spans and the mark bits of
// each size class in use): 430-460 KiB for the first, 1.3-1.5 MiB after bursts, half
// of an init's private memory (BENCHMARKS.md, "#14, eighth pass: the init's memory
// after bursts"). An init whose requests allocate nothing never reaches its heap's
// goal, never collects, and stays at the memory it started with, however many
// processes it starts (BENCHMARKS.md, "#14, ninth pass"). The fallback path
// (ForkExec) still allocates each child's strings, and rare requests (a failure, a
// session's end, a request with more than maxKeptStrings strings) allocate as they
// like: for them, a second after the last spawn the init hands its unused memory
// back to the kernel (trim_linux.go), so an idle init holds about what it uses.
//
// # User namespace and workspace ownership
//
// With [Config].UserNS the init is also cloned into a new user namespace, which owns
// its other namespaces: ids 0 to Size-1 inside are HostUID (HostGID) onwards outside,
// and the init is root inside, with no supplementary groups. Everything above works
// the same inside it, but root inside is an unprivileged uid to the host: a host file
// seen inside (owned by the host's root, which is unmapped and shows as 65534) is
// refused for lack of permission before its read-only mount is even asked, and a
// setuid-root host program gives nothing. Without a user namespace, Config.UID is the
// fallback way to run unprivileged; [UserNSSupported] says which one this machine
// allows.
//
// The workspace is not chowned. The server clones its mount into a detached tree,
// idmapped through the init's user namespace (mount_setattr with MOUNT_ATTR_IDMAP, on
// ext4, tmpfs, a loop-mounted ext4 image and most local filesystems), and hands it
// over with the config; the init attaches it at /workspace. Through that mount a file
// of uid n on disk is uid n inside: what the files API (the host's root) writes is
// root's inside, what root inside writes is root's on disk, modes as they are, and a
// workspace made before (root-owned) needs no adoption. TestMeasureUserNS measured the
// clone at a few microseconds, against about two milliseconds to lchown a
// thousand files. A Rootfs comes the same way, read-only and not idmapped: root inside
// may not even search the directories above it, and the init could not bind a mount
// of the server's namespace anyway.
//
// Once its root is built, an init in a user namespace executes itself again
// (reexec_linux.go) if the server had a loop device's filesystem mounted when the init
// started. The mounts it copied from the server are locked to one another in a
// namespace its user namespace owns, so the old root it detached stays whole while
// anything uses any of it, and the init's own loader and C libraries, mapped from it
// at its start, did for the init's whole life: every filesystem the server had mounted
// then (other sandboxes' workspace images, whose loop devices held their files) stayed
// alive with it. Executed from its new root, the init uses nothing of the old one,
// which the kernel then releases. The config crosses the exec in a memory file; the
// control socket and cgroup fds keep their numbers. The exec is about one more start
// of the binary: TestMeasureUserNS measured a Start in a user namespace at 1.7-1.9
// times a plain one with it, 1.1-1.2 times without.
//
// # Lifetime
//
//  1. The init is started with Pdeathsig SIGKILL from one OS thread that lives as long
//     as the process (Pdeathsig follows the creating thread): if the server dies, even
//     by SIGKILL, the init dies, and with pid 1 of a namespace gone the kernel kills
//     the rest.
//  2. As pid 1 it reaps every process inside, spawned or orphaned, and reports the
//     exits of the spawned ones.
//  3. When its control socket closes (Close, or the server's end closing as it dies),
//     or on SIGTERM, SIGINT or SIGHUP, it kills everything inside and exits.
//
// # Leases
//
// A server that is stopped (a long GC pause, SIGSTOP, a stalled VM) cannot stop its
// sandboxes when its cluster lease runs out, so with [Config].Lease each init holds the
// lease's deadline itself:
//
//  1. The deadline is an absolute time of CLOCK_BOOTTIME ([Now]), which every process
//     of the host reads alike and which, unlike CLOCK_MONOTONIC, runs on through a
//     suspend: a host waking from one finds the lease over, as its peers saw it.
//  2. The init arms a timerfd on that clock at the deadline. When it fires with no
//     renewal since, the init freezes [Config].Freeze (cgroup.freeze), the group
//     every spawn's group lies below, so every process of the sandbox stops, setsid
//     daemons too, while the init, outside it, keeps running to hear a renewal. Where
//     there is no freezer (no Freeze, or a kernel before 5.2) it kills every process
//     of the sandbox instead. It logs which on stderr.
//  3. [Init.Renew] moves the deadline on. It never blocks: it records the deadline and
//     wakes the Init's sender goroutine, which sends the latest one in a small frame;
//     renewals made meanwhile coalesce. A renewal that reaches a fenced init with its
//     deadline still ahead thaws the sandbox.
//  4. While fenced the init refuses spawns (ErrLeaseExpired). Each spawn frame also
//     carries the client's latest deadline, so a spawn never fails for a renewal still
//     queued behind it. The init checks the lease and forks under one lock, the one the
//     timer takes to freeze: on the fallback path it enters the spawn's group (below
//     the freeze group) for the fork, and must never be frozen there; on its own path
//     it would wait, in clone3 with CLONE_VFORK, for a child frozen before its exec. A
//     sandbox started with its deadline past is frozen (empty) at once and runs nothing
//     until renewed.
//
// The timer fired within a few milliseconds of the deadline in the tests (under -race
// on a loaded 2-core VM). A frozen process can still be killed (SIGKILL, cgroup.kill):
// Close and the runtime's kills end a frozen sandbox as any other.
//
// # Protocol
//
// The server and the init talk over a SOCK_SEQPACKET socketpair (the init's end is its
// fd 3). Each frame is one datagram holding one message with an "op" and an "id", in a
// small binary encoding (codec_linux.go); a frame is at most 128 KiB, and a larger
// request travels in a sealed memory file (spill_linux.go). fds travel as SCM_RIGHTS
// on the frame they belong to.
//
//	server → init  config   {config, home, freeze_fd}     first frame; with UserNS
//	                        + the workspace's idmapped tree (+ the rootfs's tree)
//	init → server  ready    {code: the SpawnPath}          setup done; or error {err, errno}
//	server → init  spawn    {id, argv, env, dir, tty, session, extra, cgroup, cgroup_dir,
//	                        status, no_wait, lease} + 3 fds (stdin, stdout, stderr) or 1 fd
//	                        (a PTY slave, with tty set), then the extra fds, the
//	                        cgroup.procs, the group's directory and the status pipe,
//	                        each if the frame says so
//	init → server  started  {id, pid} + SCM_CREDENTIALS naming the process + its
//	                        pidfd (SCM_RIGHTS); or error. A no_wait spawn (an exec)
//	                        gets no started frame, only an error if it fails
//	server → init  signal   {id, target, sig}             target: a spawn's id
//	init → server  ok {id}, or error {id, err, errno}
//	init → server  exit     {id, code, signal}            id: the spawn's id; once;
//	                        first written to the status pipe, if any (8 bytes);
//	                        a no_wait spawn gets the pipe only, no frame
//	server → init  lease    {lease}                       the new deadline; no reply
//
// The started frame carries the process in SCM_CREDENTIALS (the init, with
// CAP_SYS_ADMIN, may name another process): the kernel translates the pid into the
// receiver's pid namespace, which is how the server learns the host pid without a
// /proc scan. The init holds one lock across a child's registration and its started
// frame; its reaper takes it to look a child up (and out), and leaves a child it does
// not know alone while a fork is under way, so a process is never reaped before it is
// announced, and its exit frame always follows its started frame. The report, the
// kill of what is left of its group and the wait4 come after, without the lock: once
// out of the table no one names the pid, which cannot be reused before the wait4. The
// fork itself runs outside that lock too: exits are reported while the spawner waits
// in clone3 (for a vfork child, or preempted by an async one). With home set, the init's fds 4 and 5 are its own
// group's cgroup.procs and directory. The pidfd (the init forks with CLONE_PIDFD) is
// what Child.ExitFD hands out: a poll on it sees the exit without waiting for the
// exit frame, which still brings the status.
//
// # Caveats
//
//   - A PTY slave passed in comes from the server's devpts: inside, it works as the
//     controlling terminal (and through /dev/tty), but has no name under /dev/pts.
//   - stdio files are put in blocking mode, as os/exec does: the process shares
//     their open file descriptions.
//   - The seccomp filter exists for amd64 and arm64; elsewhere Start fails. The own
//     spawn path exists for amd64 with cgo; arm64 and builds without cgo take the
//     fallback.
//   - With UserNS every sandbox shares one range unless the caller gives each its
//     own. Root inside may set the setuid bit on its own files, which are root's on
//     disk: the host must never run programs from workspaces (mount their disks
//     nosuid). A Rootfs must be readable and searchable by others.
//   - An init with UserNS and a Rootfs is not executed again (the Rootfs's loader may
//     not run this binary): it keeps the server's mounts of its start alive, detached,
//     until it exits.
//   - Until an init has detached the old root (a few hundred milliseconds under load),
//     its mount namespace holds a copy of every mount the server had at its start.
//   - The init exits, and the server's Wait calls return ErrClosed or ErrInitExited,
//     without a final exit frame for processes still running.
package nsinit
