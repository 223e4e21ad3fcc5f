// The arguments of the init's own spawn path (clone_linux_amd64.c), shared with Go
// (clone_cgo_linux.go). Pointers are carried as integers: they point into memory the
// Go caller keeps alive across the call and the child only reads.
#include <stdint.h>

// Where a child failed (sg_spawn.stage).
enum {
	SG_STAGE_SECCOMP = 1,
	SG_STAGE_CGROUP,
	SG_STAGE_SESSION,
	SG_STAGE_CRED,
	SG_STAGE_CHDIR,
	SG_STAGE_FDS,
	SG_STAGE_CTTY,
	SG_STAGE_EXEC,
};

struct sg_spawn {
	uint64_t path, argv, envp, dir; // char *, char **, char **, char *
	uint64_t fds;			// int[nfds]: the fd each of 0..nfds-1 gets; scratch for the child
	uint64_t filter;		// struct sock_fprog * to install, or 0
	uint64_t mask;			// the thread's signal mask, restored in the child
	int32_t nfds;
	int32_t setsid; // setsid, else setpgid(0, 0)
	int32_t ctty;	// fd 0 becomes the controlling terminal
	int32_t cred;	// setgroups(0), setgid(gid), setuid(uid)
	uint32_t uid, gid;
	int32_t cgroup;	    // a cgroup2 directory to clone into (CLONE_INTO_CGROUP), or -1
	int32_t procs;	    // a cgroup.procs the child writes itself into, or -1
	int32_t want_pidfd; // CLONE_PIDFD
	int32_t pidfd;	    // out: the child's pidfd
	int32_t nofile;	    // restore RLIMIT_NOFILE (set by sg_spawn)
	int32_t err;	    // out: the errno that ended the child, 0 if it execed
	int32_t stage;	    // out: the SG_STAGE_ that failed
	int32_t pad;
	// An async spawn (tid != 0): the child's own stack, and the word the kernel clears
	// (CLONE_CHILD_CLEARTID) once the child has left the memory it shares with the
	// parent, by exec or exit. The parent does not wait: see sg_spawn_async.
	uint64_t stack;	     // the stack's lowest address
	uint64_t stack_size; // its size
	uint64_t tid;	     // uint32_t *, set to 1 by the caller
};

// sg_spawn starts a process as the struct says; it returns the pid (the child may
// have failed: see err) or -errno if clone3 failed.
long sg_spawn(struct sg_spawn *a);

// sg_spawn_async starts a process as sg_spawn does, on a->stack, without waiting
// for it to exec: see clone_linux_async.go.
long sg_spawn_async(struct sg_spawn *a);

// sg_probe clones as sg_spawn would, with a child that exits 0 at once.
long sg_probe(struct sg_spawn *a);
