package plugins

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"

	"github.com/sandgate/sandgate/plugins/internal/wire"
)

// Host runs one policy plugin (or the built-in policy when Config.Path is empty) and
// answers budget and route decisions with it.
//
// All methods are safe for concurrent use. Budget and Route run the guest on the
// caller's goroutine, one instance per call, under Config.CallTimeout. Reloads (from
// the watcher goroutine or [Host.Reload]) are serialized and never block calls: calls
// in flight finish on the old module, which is closed once the last of them returns.
type Host struct {
	cfg   Config
	cache wazero.CompilationCache
	stats stats
	rates rateCounters
	logs  logLimiter

	route, budget breaker
	watchdog      *watchdog // ends overrunning calls

	cur  atomic.Pointer[generation]
	gens sync.WaitGroup // one per generation not yet shut down

	reloadMu sync.Mutex // serializes loads; guards the fields below
	nextID   uint64
	closed   bool

	watchStop context.CancelFunc
	watchWG   sync.WaitGroup
	closeOnce sync.Once
}

// New loads cfg.Path (if set), fills the instance pool and starts the file watcher.
// A nil cfg means [DefaultConfig]. It fails if the config is invalid or the module
// cannot be compiled, does not follow plugins/ABI.md, or its init fails; the error
// matches ErrInvalidConfig or ErrInvalidModule. ctx bounds the loading only.
func New(ctx context.Context, cfg *Config) (*Host, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: c, watchdog: newWatchdog(c.CallTimeout)}
	h.route.init(c.BreakerFailures, c.BreakerCooldown)
	h.budget.init(c.BreakerFailures, c.BreakerCooldown)
	h.rates.init()
	if c.Path == "" {
		return h, nil
	}
	if c.CacheDir != "" {
		if h.cache, err = wazero.NewCompilationCacheWithDir(c.CacheDir); err != nil {
			return nil, fmt.Errorf("plugins: failed to open compilation cache: %w", err)
		}
	} else {
		h.cache = wazero.NewCompilationCache()
	}
	if err := h.Reload(ctx); err != nil {
		_ = h.cache.Close(context.Background())
		return nil, err
	}
	if c.PollInterval > 0 {
		wctx, stop := context.WithCancel(context.Background())
		h.watchStop = stop
		h.watchWG.Go(func() { h.watch(wctx) })
	}
	return h, nil
}

// Close stops the watcher, waits for calls in flight (they are bounded by
// Config.CallTimeout) and closes every runtime and the compilation cache. Later calls
// answer by the failure policy with ErrClosed. Close is idempotent and returns nil.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		if h.watchStop != nil {
			h.watchStop()
			h.watchWG.Wait()
		}
		h.reloadMu.Lock()
		h.closed = true
		g := h.cur.Swap(nil)
		h.reloadMu.Unlock()
		if g != nil {
			g.unref()
		}
		h.gens.Wait()
		h.watchdog.close()
		if h.cache != nil {
			_ = h.cache.Close(context.Background())
		}
	})
	return nil
}

// Generation returns the number of modules put in service so far; it grows by one on
// each successful reload and is 0 without a plugin.
func (h *Host) Generation() uint64 {
	if g := h.cur.Load(); g != nil {
		return g.id
	}
	return 0
}

// Route decides whether a request is served. The returned Decision is always usable.
// A nil error means the plugin answered (or there is no plugin). When the plugin fails
// (trap, timeout, garbage, busy pool, open breaker, closed host), the decision is the
// failure policy's, 503 deny by default or allow with Config.RouteFailOpen, and the
// error is a [*CallError] saying why; the failure is already logged and counted.
func (h *Host) Route(ctx context.Context, req *RouteRequest) (Decision, error) {
	h.stats.route.calls.Add(1)
	var d Decision
	answered, err := h.do(ctx, &h.route, &h.stats.route, "route",
		func(in *instance) bool { return in.route != nil },
		func(ctx context.Context, in *instance) error {
			out, err := in.call(ctx, in.route, func(b []byte) []byte {
				return wire.AppendRouteRequest(b, (*wire.RouteRequest)(req))
			})
			if err != nil {
				return err
			}
			if err := wire.DecodeDecision(out, (*wire.Decision)(&d)); err != nil {
				return fmt.Errorf("%w: %w", ErrGarbage, err)
			}
			if err := checkPool(d.Pool); err != nil {
				return fmt.Errorf("%w: %w", ErrGarbage, err)
			}
			return nil
		})
	switch {
	case err != nil && h.cfg.RouteFailOpen:
		d = Decision{Allow: true}
	case err != nil:
		d = Decision{Status: 503, Reason: "policy plugin unavailable"}
	case !answered:
		d = Decision{Allow: true}
	case !d.Allow:
		if d.Status == 0 {
			d.Status = 403
		}
		h.stats.route.denied.Add(1)
	}
	return d, err
}

// Budget decides the budget of a sandbox, clamped to Config.MaxBudget. The returned
// Budget is always usable: Config.DefaultBudget when the plugin has no opinion, has no
// budget hook, or fails; in the last case the error is a [*CallError] saying why (the
// failure is already logged and counted).
func (h *Host) Budget(ctx context.Context, req *BudgetRequest) (Budget, error) {
	h.stats.budget.calls.Add(1)
	r := wire.BudgetRequest{
		Tenant: req.Tenant, SandboxID: req.SandboxID, Labels: req.Labels, Reload: req.Reload,
		Defaults: h.cfg.DefaultBudget.wire(), Max: h.cfg.MaxBudget.wire(),
	}
	var b Budget
	_, err := h.do(ctx, &h.budget, &h.stats.budget, "budget",
		func(in *instance) bool { return in.budget != nil },
		func(ctx context.Context, in *instance) error {
			// Each module is spoken to in its own ABI version: a version 1 module
			// neither sees nor sets the fields added later, which take the defaults.
			out, err := in.call(ctx, in.budget, func(buf []byte) []byte {
				return wire.AppendBudgetRequestV(buf, &r, in.version)
			})
			if err != nil {
				return err
			}
			var wb wire.Budget
			if err := wire.DecodeBudgetV(out, &wb, in.version); err != nil {
				return fmt.Errorf("%w: %w", ErrGarbage, err)
			}
			b = budgetOf(&wb)
			return nil
		})
	if err != nil {
		b = Budget{}
	}
	return clamp(b, h.cfg.DefaultBudget, h.cfg.MaxBudget), err
}

// do runs one hook call on a pooled instance with the deadline, breaker and counting.
// has reports whether the instance exports the hook. answered is false when there is no
// plugin or it does not export the hook: the built-in answer applies.
func (h *Host) do(parent context.Context, br *breaker, hs *hookStats, hook string,
	has func(*instance) bool, call func(context.Context, *instance) error,
) (answered bool, err error) {
	g := h.ref()
	if g == nil {
		if h.isClosed() {
			return false, h.fail(hs, hook, ErrClosed, nil)
		}
		return false, nil // built-in policy
	}
	defer g.unref()
	if !br.allow(h.cfg.Now) {
		return false, h.fail(hs, hook, ErrBreakerOpen, nil)
	}
	in, timeout, err := g.acquire(parent)
	if err != nil {
		// A full pool is overload, not a broken plugin: the breaker does not count it.
		if parent.Err() != nil {
			return false, h.fail(hs, hook, ErrCanceled, err)
		}
		return false, h.fail(hs, hook, ErrBusy, err)
	}
	if !has(in) {
		g.release(in, false)
		br.record(true, h.cfg.Now)
		return false, nil
	}
	in.ctx.start(parent, timeout)
	err = call(in.ctx, in)
	if !in.ctx.stop() && err == nil {
		err = classify(in.ctx, errLate) // overran: the instance is closing
	}
	g.release(in, err != nil)
	if err == nil {
		br.record(true, h.cfg.Now)
		return true, nil
	}
	kind := kindOf(err)
	if kind != ErrCanceled {
		br.record(false, h.cfg.Now)
	}
	return false, h.fail(hs, hook, kind, err)
}

func kindOf(err error) error {
	for _, k := range []error{ErrTimeout, ErrCanceled, ErrGarbage, ErrBusy, ErrTrap} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ErrTrap
}

// fail counts and logs a failed call and returns its error.
func (h *Host) fail(hs *hookStats, hook string, kind, cause error) error {
	hs.count(kind)
	e := &CallError{Hook: hook, Kind: kind, Err: cause}
	if kind != ErrClosed && h.logs.allow(h.cfg.Now()) {
		h.cfg.Logger.Warn("plugins: call failed", "path", h.cfg.Path, "hook", hook, "err", e)
	}
	return e
}

// ref returns the current generation with a reference held, or nil.
func (h *Host) ref() *generation {
	for {
		g := h.cur.Load()
		if g == nil || g.tryRef() {
			return g
		}
		// g is closing: a reload replaced it between Load and tryRef; load again.
	}
}

func (h *Host) isClosed() bool {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	return h.closed
}

// Reload reads Config.Path again, compiles and checks it and fills a new pool, off the
// request path, then swaps it in; calls in flight finish on the old module, which is
// closed when they are done. On failure the old module stays in service and the error
// (logged and counted too) says why. It is what SIGHUP should call. ctx bounds loading.
func (h *Host) Reload(ctx context.Context) error {
	if h.cfg.Path == "" {
		return nil
	}
	bin, err := os.ReadFile(h.cfg.Path)
	if err != nil {
		h.stats.reloadFailures.Add(1)
		err = fmt.Errorf("plugins: failed to read %s: %w", h.cfg.Path, err)
		h.cfg.Logger.Error("plugins: reload failed, keeping the loaded module", "err", err)
		return err
	}
	return h.load(ctx, bin, sha256.Sum256(bin))
}

func (h *Host) load(ctx context.Context, bin []byte, hash [32]byte) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	if h.closed {
		return ErrClosed
	}
	h.nextID++
	h.gens.Add(1)
	g, err := h.loadGeneration(ctx, h.nextID, bin, hash)
	if err != nil {
		h.gens.Done()
		h.nextID--
		h.stats.reloadFailures.Add(1)
		err = fmt.Errorf("plugins: failed to load %s: %w", h.cfg.Path, err)
		h.cfg.Logger.Error("plugins: load failed, keeping the loaded module", "err", err)
		return err
	}
	old := h.cur.Swap(g)
	h.stats.loads.Add(1)
	h.route.reset()
	h.budget.reset()
	if old != nil {
		old.unref()
		h.stats.reloads.Add(1)
		h.cfg.Logger.Info("plugins: reloaded", "path", h.cfg.Path, "generation", g.id, "sha256", fmt.Sprintf("%x", hash[:8]))
	}
	if h.cfg.OnReload != nil && old != nil {
		h.cfg.OnReload(g.id)
	}
	return nil
}
