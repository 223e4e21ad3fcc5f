package plugins

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Host functions of plugins/ABI.md, module "sandgate". None touches files or network.
const (
	maxLogLine    = 4096
	maxCounterKey = 256
	maxCounters   = 65536
	logsPerSecond = 100
)

func (h *Host) instantiateHostModule(ctx context.Context, g *generation) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := g.rt.NewHostModuleBuilder("sandgate")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, s []uint64) {
		msg, ok := readString(m, s[1], s[2], maxLogLine)
		if !ok || !h.logs.allow(h.cfg.Now()) {
			return
		}
		h.cfg.Logger.Log(ctx, slog.Level(int32(s[0])), msg, "plugin", h.cfg.Path, "generation", g.id)
	}), []api.ValueType{i32, i32, i32}, nil).Export("log")

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(h.cfg.Now().UnixMilli())
	}), nil, []api.ValueType{i64}).Export("clock_ms")

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		key, ok := readString(m, s[0], s[1], maxCounterKey)
		if !ok {
			s[0] = math.MaxInt64
			return
		}
		s[0] = uint64(h.rates.add(key, int64(s[2]), int64(s[3]), h.cfg.Now()))
	}), []api.ValueType{i32, i32, i64, i64}, []api.ValueType{i64}).Export("counter_add")

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		msg, _ := readString(m, s[0], s[1], maxLogLine)
		if v, ok := g.byModule.Load(m); ok {
			v.(*instance).setGuestErr(msg)
		}
	}), []api.ValueType{i32, i32}, nil).Export("error")
	_, err := b.Instantiate(ctx)
	return err
}

// readString copies a guest string, truncated to limit bytes.
func readString(m api.Module, ptr, n uint64, limit uint32) (string, bool) {
	l := min(uint32(n), limit)
	b, ok := m.Memory().Read(uint32(ptr), l)
	if !ok {
		return "", false
	}
	return string(b), true
}

// rateCounters are fixed-window counters shared by every instance and generation, so
// rate limits survive reloads. Safe for concurrent use.
type rateCounters struct {
	mu sync.Mutex
	m  map[string]*rateCounter // guarded by mu
}

type rateCounter struct {
	start, window, value int64 // start and window in ms
}

func (r *rateCounters) init() { r.m = make(map[string]*rateCounter) }

// add adds delta to key's counter in the current window of windowMS and returns the new
// value. When the table is full of live windows it answers math.MaxInt64, so limits
// fail closed rather than the table growing without bound.
func (r *rateCounters) add(key string, delta, windowMS int64, now time.Time) int64 {
	windowMS = max(windowMS, 1)
	ms := now.UnixMilli()
	start := ms - ms%windowMS
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[key]
	if !ok {
		if len(r.m) >= maxCounters {
			r.sweepLocked(ms)
			if len(r.m) >= maxCounters {
				return math.MaxInt64
			}
		}
		c = &rateCounter{}
		r.m[key] = c
	}
	if c.start != start || c.window != windowMS {
		c.start, c.window, c.value = start, windowMS, 0
	}
	c.value += delta
	return c.value
}

func (r *rateCounters) sweepLocked(nowMS int64) {
	for k, c := range r.m {
		if nowMS >= c.start+c.window {
			delete(r.m, k)
		}
	}
}

// logLimiter lets through logsPerSecond lines per second and counts the rest.
type logLimiter struct {
	second  atomic.Int64
	n       atomic.Int64
	dropped atomic.Uint64
}

func (l *logLimiter) allow(now time.Time) bool {
	s := now.Unix()
	if old := l.second.Load(); old != s && l.second.CompareAndSwap(old, s) {
		l.n.Store(0)
	}
	if l.n.Add(1) > logsPerSecond {
		l.dropped.Add(1)
		return false
	}
	return true
}
