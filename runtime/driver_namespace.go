package runtime

// NamespaceDriver runs each sandbox's processes inside namespaces of their own: one
// small init per sandbox (this binary, re-executed: linking the runtime is all it takes) holds new pid,
// mount, uts, ipc and network namespaces, and every exec, process, terminal and
// session shell is spawned by it, forked from a thread with no capabilities,
// no_new_privs and a seccomp filter. Inside, / is a read-only view of the host's
// system directories (or of Rootfs), /proc is the sandbox's own, /tmp and /dev/shm are
// private tmpfs, and the workspace is read-write at /workspace, the default cwd and
// HOME; nothing else of the host's files (the server's data, tokens, other
// workspaces) exists there. Pids in the API are the pids inside.
//
// The init dies with the server (even by SIGKILL) and takes every process inside
// with it; Close ends it. It needs root (or a user namespace) and a cgroup2
// hierarchy, whose groups end a tree however its processes left their process group.
// Its zero value uses the defaults.
type NamespaceDriver struct {
	// Rootfs, if set, is a host directory whose top-level entries make up the
	// read-only root; "" is a read-only view of the host's /usr, /etc, /opt and the
	// bin, sbin and lib* links.
	Rootfs string
	// Network is the default network of a sandbox: "loopback" (the default: its own
	// network namespace with only lo, up), "none" (lo down) or "host" (the host's
	// network). Config.Network overrides it per sandbox.
	Network string
	// UID and GID are the ids processes run as inside; 0 (the default) is root
	// without capabilities.
	UID, GID int
	// UserNS puts each sandbox in a user namespace of its own that maps ids 0-65535
	// inside onto 100000-165535 on the host: root inside is an unprivileged uid
	// outside. The workspace is mounted idmapped, so its files, owned by the server's
	// user on disk, belong to root inside. ProbeNamespace says whether the machine
	// allows it.
	UserNS bool
	// Lease, if set, is held by every sandbox's init: when it runs out the init
	// freezes the sandbox's processes (see the package doc, Fencing) and starting one
	// fails with ErrLeaseExpired, until Lease.Extend. Nil (the default) is no lease:
	// nothing is ever frozen.
	Lease *Lease
}

var _ Driver = NamespaceDriver{}

// Name returns "namespace".
func (NamespaceDriver) Name() string { return "namespace" }

func (NamespaceDriver) guestDir(string) string { return GuestWorkspace }

// GuestWorkspace is where the namespace driver mounts the workspace inside a sandbox.
const GuestWorkspace = "/workspace"
