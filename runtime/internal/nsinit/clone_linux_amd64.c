//go:build linux && cgo && amd64

// The init's own spawn path (see clone_linux.go and the package doc, "Spawning"):
// clone3 with CLONE_VM|CLONE_VFORK onto a stack of our own, the child placed in its
// cgroup by the kernel (CLONE_INTO_CGROUP), with default signal handlers
// (CLONE_CLEAR_SIGHAND) and a pidfd (CLONE_PIDFD). The child runs sg_child: raw
// syscalls only, no libc (it shares the parent's memory and thread pointer, so errno
// or a libc lock would be the parent's), and reports a failure through the shared
// struct before it exits 127.

#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <fcntl.h>

#include "clone_linux.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

// sg_clone_args is struct clone_args of Linux 5.7 (CLONE_ARGS_SIZE_VER2), spelled out
// so that older headers do not matter.
struct sg_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

// sg_clone3 is clone3(args, size) whose child, on the new stack, calls fn(arg) and
// exits with its result. The parent gets the child's pid or -errno.
long sg_clone3(struct sg_clone_args *args, unsigned long size, int (*fn)(void *), void *arg);
__asm__(
	".text\n"
	".globl sg_clone3\n"
	".hidden sg_clone3\n"
	".type sg_clone3,@function\n"
	"sg_clone3:\n"
	"	mov %rdx, %r8\n"     // fn and arg in registers the syscall keeps
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n"    // SYS_clone3
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	xor %ebp, %ebp\n"    // child: outermost frame, on the new stack
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $231, %eax\n"    // SYS_exit_group
	"	syscall\n"
	"	hlt\n"
	"1:	ret\n"
	".size sg_clone3, .-sg_clone3\n");

static inline long sg_sys(long n, long a1, long a2, long a3, long a4) {
	long ret;
	register long r10 __asm__("r10") = a4;
	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			     : "rcx", "r11", "memory");
	return ret;
}

// sg_nofile is RLIMIT_NOFILE as the process started with, read before Go's runtime
// raises the soft limit; sg_nofile_ok says it was read. A spawn restores it, as Go's
// ForkExec does, so a sandbox process sees the limit it would have seen before.
static struct rlimit sg_nofile;
static int sg_nofile_ok;

__attribute__((constructor)) static void sg_save_nofile(void) {
	sg_nofile_ok = getrlimit(RLIMIT_NOFILE, &sg_nofile) == 0;
}

// sg_stack is the stack of the children the parent waits for (CLONE_VFORK): the spawns
// are serialized on one thread and each such child leaves it (execs or exits) before
// clone3 returns, so one is enough. An async child brings its own (sg_spawn.stack). A guard
// page below it turns an overflow into a fault rather than a write into other memory.
#define SG_STACK (64 << 10)
#define SG_GUARD (4 << 10)
static char *sg_stack;

static int sg_stack_init(void) {
	if (sg_stack)
		return 0;
	char *p = mmap(0, SG_STACK + SG_GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (mprotect(p, SG_GUARD, PROT_NONE) != 0) {
		munmap(p, SG_STACK + SG_GUARD);
		return -1;
	}
	sg_stack = p + SG_GUARD;
	return 0;
}

// sg_fail records where and why the child failed and ends it.
static int sg_fail(struct sg_spawn *a, int stage, long r) {
	a->err = (int)-r;
	a->stage = stage;
	return 127;
}

// sg_child is what Go's forkAndExecInChild does for the init's spawns, in its order,
// after adding the seccomp filter that refuses clone3 (the rest of the filter it
// inherits from the spawner thread) and moving into the spawn's cgroup when the
// kernel did not clone it there.
__attribute__((noinline)) static int sg_child(void *arg) {
	struct sg_spawn *a = arg;
	int *fd = (int *)(uintptr_t)a->fds;
	int n = a->nfds, i, nextfd;
	long r;

	if (a->filter) {
		r = sg_sys(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)a->filter, 0);
		if (r < 0)
			return sg_fail(a, SG_STAGE_SECCOMP, r);
	}
	if (a->procs >= 0) {
		r = sg_sys(SYS_write, a->procs, (long)"0", 1, 0);
		if (r < 0)
			return sg_fail(a, SG_STAGE_CGROUP, r);
	}
	r = a->setsid ? sg_sys(SYS_setsid, 0, 0, 0, 0) : sg_sys(SYS_setpgid, 0, 0, 0, 0);
	if (r < 0)
		return sg_fail(a, SG_STAGE_SESSION, r);
	if (a->cred) {
		if ((r = sg_sys(SYS_setgroups, 0, 0, 0, 0)) < 0)
			return sg_fail(a, SG_STAGE_CRED, r);
		if ((r = sg_sys(SYS_setgid, a->gid, 0, 0, 0)) < 0)
			return sg_fail(a, SG_STAGE_CRED, r);
		if ((r = sg_sys(SYS_setuid, a->uid, 0, 0, 0)) < 0)
			return sg_fail(a, SG_STAGE_CRED, r);
	}
	if ((r = sg_sys(SYS_chdir, (long)a->dir, 0, 0, 0)) < 0)
		return sg_fail(a, SG_STAGE_CHDIR, r);
	// Pass 1: move each fd[i] < i above every target and source, so pass 2 does not
	// overwrite one it still needs.
	nextfd = n;
	for (i = 0; i < n; i++)
		if (fd[i] > nextfd)
			nextfd = fd[i];
	nextfd++;
	for (i = 0; i < n; i++) {
		if (fd[i] >= 0 && fd[i] < i) {
			if ((r = sg_sys(SYS_dup3, fd[i], nextfd, O_CLOEXEC, 0)) < 0)
				return sg_fail(a, SG_STAGE_FDS, r);
			fd[i] = nextfd++;
		}
	}
	// Pass 2: put fd[i] at i, without close-on-exec; everything else the init has
	// open is close-on-exec.
	for (i = 0; i < n; i++) {
		if (fd[i] == i)
			r = sg_sys(SYS_fcntl, i, F_SETFD, 0, 0);
		else
			r = sg_sys(SYS_dup3, fd[i], i, 0, 0);
		if (r < 0)
			return sg_fail(a, SG_STAGE_FDS, r);
	}
	if (a->ctty && (r = sg_sys(SYS_ioctl, 0, TIOCSCTTY, 1, 0)) < 0)
		return sg_fail(a, SG_STAGE_CTTY, r);
	if (a->nofile)
		(void)sg_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&sg_nofile, 0);
	sg_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&a->mask, 0, 8);
	r = sg_sys(SYS_execve, (long)a->path, (long)a->argv, (long)a->envp, 0);
	return sg_fail(a, SG_STAGE_EXEC, r);
}

// sg_probe_child is the probe's child: it only exits.
static int sg_probe_child(void *arg) {
	(void)arg;
	return 0;
}

static long sg_clone(struct sg_spawn *a, int (*fn)(void *)) {
	uint64_t all = ~(uint64_t)0;
	struct sg_clone_args ca;
	long pid;

	if (!a->tid && sg_stack_init() != 0)
		return -12; // ENOMEM
	if (sg_nofile_ok) {
		struct rlimit cur;
		a->nofile = getrlimit(RLIMIT_NOFILE, &cur) == 0 &&
			    (cur.rlim_cur != sg_nofile.rlim_cur || cur.rlim_max != sg_nofile.rlim_max);
	}
	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_VM | CLONE_VFORK | CLONE_CLEAR_SIGHAND;
	ca.stack = (uint64_t)(uintptr_t)sg_stack;
	ca.stack_size = SG_STACK;
	if (a->tid) {
		// Async: the child runs on a stack of its own while the parent goes on; the
		// kernel clears *tid and wakes its futex when the child execs or exits
		// (mm_release), the point where CLONE_VFORK would have woken the parent.
		ca.flags = CLONE_VM | CLONE_CLEAR_SIGHAND | CLONE_CHILD_CLEARTID;
		ca.child_tid = a->tid;
		ca.stack = a->stack;
		ca.stack_size = a->stack_size;
	}
	if (a->want_pidfd) {
		ca.flags |= CLONE_PIDFD;
		ca.pidfd = (uint64_t)(uintptr_t)&a->pidfd;
	}
	if (a->cgroup >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)a->cgroup;
	}
	ca.exit_signal = SIGCHLD;
	a->err = 0;
	a->stage = 0;
	// No signal handler may run in the child, which shares the parent's memory: the
	// thread blocks every signal around the clone, and the child restores the mask
	// just before execve (its handlers are the defaults by then).
	sg_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&a->mask, 8);
	pid = sg_clone3(&ca, sizeof ca, fn, a);
	sg_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&a->mask, 0, 8);
	return pid;
}

long sg_spawn(struct sg_spawn *a) { return sg_clone(a, sg_child); }

long sg_spawn_async(struct sg_spawn *a) { return a->tid ? sg_clone(a, sg_child) : -22; }

long sg_probe(struct sg_spawn *a) { return sg_clone(a, sg_probe_child); }
