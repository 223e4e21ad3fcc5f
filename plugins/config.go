package plugins

import (
	"fmt"
	"log/slog"
	goruntime "runtime"
	"time"
)

// Config configures a [Host]. The zero value of each field means its default, which
// [DefaultConfig] spells out. [New] copies the Config; later changes have no effect.
type Config struct {
	// Path is the plugin's .wasm file. Empty means no plugin: the built-in policy
	// allows every request and gives every sandbox DefaultBudget.
	Path string
	// PluginConfig is handed to the guest's sandgate_init on every instance.
	PluginConfig []byte
	// CacheDir holds wazero's on-disk compilation cache, so restarts and reloads of a
	// known module skip compiling. Empty keeps the cache in memory only.
	CacheDir string

	// PoolSize is how many instances run calls concurrently; they are created before a
	// module is put in service. Defaults to 2×GOMAXPROCS. Each costs its guest's memory.
	PoolSize int
	// CallTimeout bounds every hook call, including the wait for a free instance; a
	// guest still running then is killed. Defaults to 20ms.
	CallTimeout time.Duration
	// InitTimeout bounds instantiating one instance and running its init. Defaults to 5s.
	InitTimeout time.Duration
	// MemoryLimitBytes caps each instance's linear memory. Defaults to 32 MiB.
	MemoryLimitBytes int64
	// RecycleAfterCalls replaces an instance after this many calls. Defaults to 100000.
	RecycleAfterCalls int
	// RecycleMemoryBytes replaces an instance whose memory grew past this. Defaults to
	// 16 MiB.
	RecycleMemoryBytes int64

	// RouteFailOpen makes a failed route call allow the request. By default it fails
	// closed: the request is denied with 503. A failed budget call always falls back to
	// DefaultBudget.
	RouteFailOpen bool
	// BreakerFailures consecutive failures of a hook open its circuit breaker: the hook
	// is answered by the failure policy without calling the plugin for BreakerCooldown,
	// then one trial call decides. Defaults to 10.
	BreakerFailures int
	// BreakerCooldown defaults to 5s.
	BreakerCooldown time.Duration

	// PollInterval is how often Path is checked for a new version (size, mtime, then a
	// hash). Defaults to 1s; negative disables the watcher (call [Host.Reload] yourself,
	// e.g. on SIGHUP).
	PollInterval time.Duration

	// DefaultBudget is a sandbox's budget when the plugin has no opinion or fails, and
	// what fields a plugin leaves unset (or, built for ABI version 1, does not know)
	// take. Zero fields default to the API's example values.
	DefaultBudget Budget
	// MaxBudget is the operator's maxima; no budget exceeds it. Zero fields default to
	// DefaultBudget's.
	MaxBudget Budget

	// Logger receives plugin log lines, failures and reloads. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock for counters and the breaker. Defaults to time.Now.
	Now func() time.Time
	// OnReload, if set, is called after a new module was put in service, synchronously
	// on the goroutine that reloaded (the watcher's or Reload's caller). The gateway uses
	// it to ask Budget again for live sandboxes; it must not block for long.
	OnReload func(generation uint64)
}

// DefaultConfig returns the defaults [New] uses for zero fields.
func DefaultConfig() Config {
	def := Budget{
		IdleTTLMS:         15 * 60 * 1000,
		MaxDurationMS:     24 * 60 * 60 * 1000,
		MaxProcesses:      64,
		MaxExecTimeoutMS:  10 * 60 * 1000,
		OutputBufferBytes: 1 << 20,
		MemoryBytes:       512 << 20,
		Pids:              256,
		CPUMillis:         1000,
		DiskBytes:         1 << 30,
		Network:           NetworkLoopback,
	}
	return Config{
		PoolSize:           2 * goruntime.GOMAXPROCS(0),
		CallTimeout:        20 * time.Millisecond,
		InitTimeout:        5 * time.Second,
		MemoryLimitBytes:   32 << 20,
		RecycleAfterCalls:  100000,
		RecycleMemoryBytes: 16 << 20,
		BreakerFailures:    10,
		BreakerCooldown:    5 * time.Second,
		PollInterval:       time.Second,
		DefaultBudget:      def,
		MaxBudget:          def,
		Logger:             slog.Default(),
		Now:                time.Now,
	}
}

// withDefaults returns a copy of c (nil allowed) with defaults filled, and checks it.
func (c *Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	var out Config
	if c != nil {
		out = *c
	}
	fill := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	if out.PoolSize == 0 {
		out.PoolSize = d.PoolSize
	}
	if out.CallTimeout == 0 {
		out.CallTimeout = d.CallTimeout
	}
	if out.InitTimeout == 0 {
		out.InitTimeout = d.InitTimeout
	}
	fill(&out.MemoryLimitBytes, d.MemoryLimitBytes)
	if out.RecycleAfterCalls == 0 {
		out.RecycleAfterCalls = d.RecycleAfterCalls
	}
	fill(&out.RecycleMemoryBytes, d.RecycleMemoryBytes)
	if out.BreakerFailures == 0 {
		out.BreakerFailures = d.BreakerFailures
	}
	if out.BreakerCooldown == 0 {
		out.BreakerCooldown = d.BreakerCooldown
	}
	if out.PollInterval == 0 {
		out.PollInterval = d.PollInterval
	}
	out.DefaultBudget.fillFrom(d.DefaultBudget)
	out.MaxBudget.fillFrom(out.DefaultBudget) // a maximum left out is the default
	if out.Logger == nil {
		out.Logger = d.Logger
	}
	if out.Now == nil {
		out.Now = d.Now
	}
	if out.PluginConfig == nil {
		out.PluginConfig = []byte{}
	} else {
		out.PluginConfig = append([]byte{}, out.PluginConfig...)
	}
	return out, out.validate()
}

func (c *Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.PoolSize < 1:
		return bad("PoolSize %d < 1", c.PoolSize)
	case c.CallTimeout < 0 || c.InitTimeout < 0:
		return bad("negative timeout")
	case c.MemoryLimitBytes < 1<<16 || c.MemoryLimitBytes > 4<<30:
		return bad("MemoryLimitBytes %d outside [64 KiB, 4 GiB]", c.MemoryLimitBytes)
	case c.RecycleAfterCalls < 1 || c.RecycleMemoryBytes < 1:
		return bad("recycle bounds must be positive")
	case c.BreakerFailures < 1 || c.BreakerCooldown < 0:
		return bad("breaker bounds must be positive")
	}
	d, m := c.DefaultBudget, c.MaxBudget
	for _, p := range [][2]int64{
		{d.IdleTTLMS, m.IdleTTLMS}, {d.MaxDurationMS, m.MaxDurationMS}, {d.MaxProcesses, m.MaxProcesses},
		{d.MaxExecTimeoutMS, m.MaxExecTimeoutMS}, {d.OutputBufferBytes, m.OutputBufferBytes},
		{d.MemoryBytes, m.MemoryBytes}, {d.Pids, m.Pids}, {d.CPUMillis, m.CPUMillis}, {d.DiskBytes, m.DiskBytes},
		{int64(d.Network.code()), int64(m.Network.code())},
	} {
		if p[0] < 1 || p[0] > p[1] {
			return bad("DefaultBudget %+v must be positive and within MaxBudget %+v", d, m)
		}
	}
	return nil
}

// fillFrom sets b's zero fields to d's.
func (b *Budget) fillFrom(d Budget) {
	for _, f := range []struct {
		v   *int64
		def int64
	}{
		{&b.IdleTTLMS, d.IdleTTLMS}, {&b.MaxDurationMS, d.MaxDurationMS}, {&b.MaxProcesses, d.MaxProcesses},
		{&b.MaxExecTimeoutMS, d.MaxExecTimeoutMS}, {&b.OutputBufferBytes, d.OutputBufferBytes},
		{&b.MemoryBytes, d.MemoryBytes}, {&b.Pids, d.Pids}, {&b.CPUMillis, d.CPUMillis}, {&b.DiskBytes, d.DiskBytes},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if b.Network == "" {
		b.Network = d.Network
	}
}
