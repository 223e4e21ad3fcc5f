package plugins

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// generation is one loaded version of the plugin: its own wazero runtime, the compiled
// module and a bounded pool of instances.
//
// Lifecycle:
//  1. loadGeneration compiles the module, instantiates PoolSize instances (the first
//     one checks the ABI and init) and starts the refill goroutine.
//  2. The host publishes it; each call takes a reference (tryRef) and drops it (unref).
//  3. When replaced, the host drops its own reference; the last unref closes the
//     generation: the refill goroutine stops, every instance and the runtime close.
type generation struct {
	h        *Host
	id       uint64
	hash     [32]byte
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	config   []byte
	byModule sync.Map // api.Module → *instance, for the error host function

	free   chan *instance
	live   atomic.Int32 // instances existing or being created
	refill chan struct{}
	ctx    context.Context // ends when the generation shuts down
	stop   context.CancelFunc
	wg     sync.WaitGroup // the refill goroutine
	refs   atomic.Int64   // the host's reference plus one per call in flight
}

// loadGeneration builds a generation from wasm bytes and fills its pool.
func (h *Host) loadGeneration(ctx context.Context, id uint64, bin []byte, hash [32]byte) (_ *generation, err error) {
	rc := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(h.cfg.MemoryLimitBytes >> 16)).
		WithCompilationCache(h.cache)
	g := &generation{
		h: h, id: id, hash: hash, config: h.cfg.PluginConfig,
		rt:     wazero.NewRuntimeWithConfig(ctx, rc),
		free:   make(chan *instance, h.cfg.PoolSize),
		refill: make(chan struct{}, 1),
	}
	g.ctx, g.stop = context.WithCancel(context.Background())
	h.stats.runtimesOpened.Add(1)
	defer func() {
		if err != nil {
			g.shutdown()
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, g.rt); err != nil {
		return nil, fmt.Errorf("failed to instantiate WASI: %w", err)
	}
	if err := h.instantiateHostModule(ctx, g); err != nil {
		return nil, fmt.Errorf("failed to instantiate host functions: %w", err)
	}
	if g.compiled, err = g.rt.CompileModule(ctx, bin); err != nil {
		return nil, fmt.Errorf("%w: failed to compile: %w", ErrInvalidModule, err)
	}
	for range h.cfg.PoolSize {
		in, err := g.create(ctx)
		if err != nil {
			return nil, err
		}
		g.free <- in
	}
	g.refs.Store(1)
	g.wg.Go(g.refillLoop)
	return g, nil
}

// create makes one instance under the init timeout, counting it in live.
func (g *generation) create(ctx context.Context) (*instance, error) {
	g.live.Add(1)
	ctx, cancel := context.WithTimeout(ctx, g.h.cfg.InitTimeout)
	defer cancel()
	in, err := newInstance(ctx, g)
	if err != nil {
		g.live.Add(-1)
		return nil, err
	}
	g.h.stats.instancesCreated.Add(1)
	return in, nil
}

// tryRef takes a reference unless the generation is already closing.
func (g *generation) tryRef() bool {
	for {
		r := g.refs.Load()
		if r <= 0 {
			return false
		}
		if g.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// unref drops a reference; the last one hands the generation to a goroutine, tracked by
// the host, that closes it.
func (g *generation) unref() {
	if g.refs.Add(-1) == 0 {
		go func() {
			defer g.h.gens.Done()
			g.shutdown()
		}()
	}
}

// acquire returns a free instance and how long a call on it may take: CallTimeout,
// less the time spent waiting for it. It waits at most CallTimeout, and never
// instantiates: replacements are made by the refill goroutine, off the request path.
func (g *generation) acquire(parent context.Context) (*instance, time.Duration, error) {
	timeout := g.h.cfg.CallTimeout
	select {
	case in := <-g.free:
		return in, timeout, nil
	default:
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	select {
	case in := <-g.free:
		deadline, _ := ctx.Deadline()
		return in, time.Until(deadline), nil
	case <-ctx.Done():
		return nil, 0, fmt.Errorf("%w: %w", ErrBusy, ctx.Err())
	}
}

// release returns in to the pool, or discards it when it failed or is due for recycling.
func (g *generation) release(in *instance, failed bool) {
	switch {
	case failed:
		g.h.stats.instancesDiscarded.Add(1)
	case in.calls >= g.h.cfg.RecycleAfterCalls || int64(in.mem.Size()) > g.h.cfg.RecycleMemoryBytes:
		g.h.stats.instancesRecycled.Add(1)
	default:
		g.free <- in // never blocks: at most PoolSize instances exist
		return
	}
	in.close(g)
	g.live.Add(-1)
	select {
	case g.refill <- struct{}{}:
	default:
	}
}

// refillLoop replaces discarded instances off the request path. A failed instantiation
// is retried with backoff, so a pool emptied by failures fills up again.
func (g *generation) refillLoop() {
	var backoff time.Duration
	for {
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-g.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else {
			select {
			case <-g.ctx.Done():
				return
			case <-g.refill:
			}
		}
		failed := false
		for int(g.live.Load()) < g.h.cfg.PoolSize && g.ctx.Err() == nil {
			in, err := g.create(g.ctx)
			if err != nil {
				if g.ctx.Err() == nil {
					g.h.cfg.Logger.Warn("plugins: failed to refill pool", "path", g.h.cfg.Path, "err", err)
				}
				failed = true
				break
			}
			g.free <- in
		}
		if failed {
			backoff = min(max(2*backoff, 50*time.Millisecond), 5*time.Second)
		} else {
			backoff = 0
		}
	}
}

// shutdown stops the refill goroutine and closes every instance and the runtime. It runs
// once, when no call holds a reference.
func (g *generation) shutdown() {
	g.stop()
	g.wg.Wait()
	for {
		select {
		case in := <-g.free:
			in.close(g)
			continue
		default:
		}
		break
	}
	_ = g.rt.Close(context.Background())
	g.h.stats.runtimesClosed.Add(1)
}
