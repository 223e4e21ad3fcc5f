package actor

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Config configures a Node. Open copies it and fills defaults; the caller's value is
// never modified. A nil *Config means all defaults, which needs DataDir, so pass one.
type Config struct {
	// NodeID is shown as the sandbox's "node". It also scopes the sandboxes' cgroups,
	// and Open ends what a previous run with the same NodeID left in them (see
	// runtime.Sweep): nodes that share a host need ids of their own. Default: the host
	// name.
	NodeID string
	// DataDir holds actors.db (when Storage is nil) and workspaces/<sandbox id>.
	// Required.
	DataDir string
	// Storage holds durable state. Nil → OpenBolt(DataDir/actors.db), closed by
	// Node.Close; a Storage passed in is not closed by the Node.
	Storage Storage
	// Policy decides budgets at create. Nil → DefaultPolicy(Defaults).
	Policy Policy
	// Defaults are the operator's default budget: a policy result's unset fields take
	// them. Zero fields → DefaultBudget()'s, narrowed to Limits (OperatorBudgets).
	Defaults Budget
	// Limits are the operator's maxima; every policy result is clamped to them. Zero
	// fields → the default's. A default above its maximum is ErrInvalid.
	Limits Budget
	// Clock drives alarms, idle TTL and passivation. Nil → the real clock.
	Clock Clock
	// PassivateAfter is how long an actor with no running processes, attached
	// clients or work in flight stays in memory after its last turn. Default 1 min.
	PassivateAfter time.Duration
	// MailboxSize bounds each actor's mailbox; a request to a full one fails with
	// ErrMailboxFull. Default 256.
	MailboxSize int
	// EventLogLimit is how many of the newest events a sandbox keeps. Default 10000.
	EventLogLimit int
	// EventLogBytes bounds the bytes of a sandbox's stored events (each event's record:
	// its data, type and time): past it the oldest events are dropped, as past
	// EventLogLimit, though the newest is always kept. Default 16 MiB
	// (DefaultEventLogBytes; docs/limits.md says why). (Extension.)
	EventLogBytes int64
	// MessageQueueLimit bounds a sandbox's queued messages; PostMessage to a full
	// queue fails with ErrBudgetExceeded. Default 10000. (Extension.)
	MessageQueueLimit int
	// MessageQueueBytes bounds the bytes of a sandbox's queued messages (each
	// message's record: its data, id and time), taken and unacknowledged ones
	// included: a PostMessage that would take the queue past it fails with a
	// *BudgetError for "message_queue_bytes", and one whose message alone is bigger
	// with ErrTooLarge. Default 16 MiB (DefaultMessageQueueBytes). (Extension.)
	MessageQueueBytes int64
	// ExitedLimit is how many exited processes' records a sandbox keeps listed at
	// once. Past it the record of the process that exited longest ago is dropped, as
	// its keep time passing would (no event; Stats.ExitedDropped counts it): a
	// sandbox that starts short processes quickly keeps its newest ExitedLimit, and
	// a new process is never refused for old ones. Default 100. (Extension.)
	ExitedLimit int
	// SessionLimit and TerminalLimit bound the sessions and terminals a sandbox
	// remembers, dead and stopped ones included: creating one more under a new id
	// fails with a *BudgetError ("max_sessions", "max_terminals"); deleting one makes
	// room (kept.go). Default 256 each. (Extension.)
	SessionLimit, TerminalLimit int
	// MaxSandboxesPerTenant caps how many sandboxes one tenant (SandboxSpec.Tenant)
	// may have on the node; a create past it fails with a *BudgetError for
	// "max_sandboxes_per_tenant". 0 means no limit. (Extension.)
	MaxSandboxesPerTenant int
	// Admission says whether this node may run the sandbox now. It is called before a
	// sandbox is activated, where an error refuses the request (or leaves an alarm to
	// the owner) without activating it; on the actor goroutine before each group of
	// turns and before a passivation's or Close's writes, where an error ends the
	// activation without writing; and before each later user turn of a group, where an
	// error refuses that request. Refused requests get ErrUnavailable wrapping the
	// error. Nil → always allowed. It must be fast (a lease check; docs/design.md,
	// "Fencing").
	Admission func(sandboxID string) error
	// Epoch returns the sandbox's owner epoch, for fencing (docs/design.md,
	// "Fencing"). An activation reads it when it loads and stamps all its writes with
	// that value; before each group of turns it reads it again, and a different value
	// ends the activation and hands the requests to a fresh one. Nil → 0 for all. It
	// must be fast. (Extension.)
	Epoch func(sandboxID string) uint64
	// KillGrace is the SIGTERM→SIGKILL grace handed to the runtime. Default 2 s.
	// (Extension.)
	KillGrace time.Duration
	// Driver is passed to runtime.Config (nil: the runtime's local driver).
	Driver runtime.Driver
	// DiskImages enforces the budget's DiskBytes: a sandbox created with DiskBytes > 0
	// gets an ext4 image of that size, DataDir/disks/<id>.img, mounted on its workspace
	// while it is active (disk.go). It needs root, loop devices and mkfs.ext4; without
	// them Open logs why and sandboxes get plain directories. Images made earlier are
	// mounted whether or not it is set. Default off (each create then costs a mkfs).
	// (Extension.)
	DiskImages bool
	// SharedWorkspaces says that every node mounts the same workspaces directory (a
	// network filesystem): a workspace found here is then always current, so a sandbox
	// that arrives from another node keeps it, and nothing removes a copy because the
	// sandbox moved. Off (the default), workspaces are node-local, and a copy that did
	// not arrive by a planned move's stream is a leftover of an earlier stay: the
	// sandbox's next activation here removes it before it runs (workspace_stale.go).
	// (Extension.)
	SharedWorkspaces bool
	// Logger receives operational logs. Nil → slog.Default().
	Logger *slog.Logger

	// runtimeUsage replaces the runtime's own usage report (usage.go) in tests.
	runtimeUsage func(*runtime.Sandbox) (memoryBytes int64, pids int)
	// diskSupported replaces the check that this machine can mount images (disk.go)
	// in tests.
	diskSupported func() error
	// diskHeld replaces diskimg.Held, and diskWait the bound of a request's wait for
	// a loop device to let an image go (disk.go), in tests.
	diskHeld func(loop int, image string) bool
	diskWait time.Duration
}

// Defaults for Config fields.
const (
	DefaultPassivateAfter    = time.Minute
	DefaultMailboxSize       = 256
	DefaultEventLogLimit     = 10000
	DefaultMessageQueueLimit = 10000
	DefaultEventLogBytes     = 16 << 20
	DefaultMessageQueueBytes = 16 << 20
	DefaultExitedLimit       = 100
	DefaultSessionLimit      = 256
	DefaultTerminalLimit     = 256
)

func (c *Config) withDefaults() (Config, error) {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.DataDir == "" {
		return cfg, fmt.Errorf("%w: Config.DataDir is required", ErrInvalid)
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return cfg, fmt.Errorf("%w: Config.DataDir: %v", ErrInvalid, err)
	}
	cfg.DataDir = dir
	if cfg.NodeID == "" {
		cfg.NodeID, _ = os.Hostname()
	}
	if cfg.Defaults, cfg.Limits, err = OperatorBudgets(cfg.Defaults, cfg.Limits); err != nil {
		return cfg, err
	}
	if cfg.Policy == nil {
		cfg.Policy = DefaultPolicy(cfg.Defaults)
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.PassivateAfter <= 0 {
		cfg.PassivateAfter = DefaultPassivateAfter
	}
	if cfg.MailboxSize <= 0 {
		cfg.MailboxSize = DefaultMailboxSize
	}
	if cfg.EventLogLimit <= 0 {
		cfg.EventLogLimit = DefaultEventLogLimit
	}
	if cfg.MessageQueueLimit <= 0 {
		cfg.MessageQueueLimit = DefaultMessageQueueLimit
	}
	if cfg.EventLogBytes <= 0 {
		cfg.EventLogBytes = DefaultEventLogBytes
	}
	if cfg.MessageQueueBytes <= 0 {
		cfg.MessageQueueBytes = DefaultMessageQueueBytes
	}
	if cfg.ExitedLimit <= 0 {
		cfg.ExitedLimit = DefaultExitedLimit
	}
	if cfg.SessionLimit <= 0 {
		cfg.SessionLimit = DefaultSessionLimit
	}
	if cfg.TerminalLimit <= 0 {
		cfg.TerminalLimit = DefaultTerminalLimit
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}
