package plugins_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
)

// TestMisbehavingPluginUnderLoad runs good and bad calls concurrently against the bad
// plugin for every misbehaviour. Every call must answer per the failure policy, every
// bad call must discard its instance (so good calls keep succeeding), and the counters
// must match what the callers saw.
func TestMisbehavingPluginUnderLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		id    string
		kind  error
		count func(plugins.HookStats) uint64
	}{
		{name: "trap", id: "trap", kind: plugins.ErrTrap, count: func(s plugins.HookStats) uint64 { return s.Traps }},
		{name: "loop", id: "loop", kind: plugins.ErrTimeout, count: func(s plugins.HookStats) uint64 { return s.Timeouts }},
		{name: "oom", id: "oom", kind: plugins.ErrTrap, count: func(s plugins.HookStats) uint64 { return s.Traps }},
		{name: "garbage", id: "garbage", kind: plugins.ErrGarbage, count: func(s plugins.HookStats) uint64 { return s.Garbage }},
		{name: "pointer outside memory", id: "badptr", kind: plugins.ErrGarbage, count: func(s plugins.HookStats) uint64 { return s.Garbage }},
		{name: "guest error", id: "zero", kind: plugins.ErrGarbage, count: func(s plugins.HookStats) uint64 { return s.Garbage }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Generous deadlines: this machine may be loaded. Only the loop needs the
			// deadline to end it, and it gets a short one.
			timeout := 2 * time.Second
			switch tt.id {
			case "loop":
				timeout = 100 * time.Millisecond
			case "oom": // filling 16 MiB with the Go runtime takes ~0.2 s alone
				timeout = 20 * time.Second
			}
			h := newHost(t, plugin(t, "bad"), func(c *plugins.Config) {
				c.PoolSize = 4
				c.CallTimeout = timeout
				c.BreakerFailures = 1 << 30 // this test is about discarding, not the breaker
				c.MemoryLimitBytes = 16 << 20
				c.RecycleMemoryBytes = 16 << 20
			})
			const workers, rounds = 4, 6
			var mu sync.Mutex
			seen := map[error]uint64{}
			var bad uint64
			var slowest time.Duration
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for r := range rounds {
						id := "good"
						if (w+r)%2 == 0 {
							id = tt.id
						}
						start := time.Now()
						d, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: id})
						took := time.Since(start)
						mu.Lock()
						if id != "good" {
							bad++
							slowest = max(slowest, took)
						}
						var ce *plugins.CallError
						switch {
						case err == nil:
							if id != "good" || !d.Allow {
								t.Errorf("%s call: %+v", id, d)
							}
						case !errors.As(err, &ce):
							t.Errorf("%s call: error %v is not a CallError", id, err)
						case d.Allow || d.HTTPStatus() != 503 || d.Code() != "unavailable":
							t.Errorf("%s call failed (%v) but answered %+v, not fail closed", id, err, d)
						case id == "good" && ce.Kind != plugins.ErrBusy && ce.Kind != plugins.ErrTimeout:
							t.Errorf("good call: %v", err) // overload is tolerated, nothing else
						case id != "good" && ce.Kind != tt.kind && ce.Kind != plugins.ErrBusy:
							t.Errorf("bad call: %v, want %v", err, tt.kind)
						}
						if ce != nil {
							seen[ce.Kind]++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			s := h.Stats()
			// Most bad calls must fail their own way. A runaway is the exception: each
			// one holds an instance for the whole deadline and its replacement is
			// instantiated afresh, so on a loaded machine calls queued behind it may find no
			// instance within their (short) deadline and fail busy instead; one ended
			// by its deadline is the proof there.
			enough := bad / 2
			if tt.kind == plugins.ErrTimeout {
				enough = 1
			}
			if seen[tt.kind] == 0 || seen[tt.kind] < enough {
				t.Fatalf("only %d of %d bad calls failed with %v (seen %v)", seen[tt.kind], bad, tt.kind, seen)
			}
			got := map[error]uint64{
				plugins.ErrTrap: s.Route.Traps, plugins.ErrTimeout: s.Route.Timeouts,
				plugins.ErrGarbage: s.Route.Garbage, plugins.ErrBusy: s.Route.Busy,
			}
			for k, v := range got {
				if seen[k] != v {
					t.Errorf("counted %d %v, callers saw %d", v, k, seen[k])
				}
			}
			if want := seen[tt.kind] + seen[plugins.ErrTimeout]*b2u(tt.kind != plugins.ErrTimeout); s.InstancesDiscarded != want {
				t.Errorf("discarded %d instances, want one per failed call (%d)", s.InstancesDiscarded, want)
			}
			if s.Route.Calls != workers*rounds {
				t.Errorf("counted %d calls, want %d", s.Route.Calls, workers*rounds)
			}
			if tt.id == "loop" && slowest > timeout+time.Second {
				t.Errorf("a runaway call took %v with a %v deadline", slowest, timeout)
			}
			// The pool refills to full strength off the request path.
			waitFor(t, "pool refill", func() bool {
				s := h.Stats()
				return s.InstancesCreated-s.InstancesDiscarded == 4
			})
			// Budget falls back to the operator's defaults on the same failures.
			b, err := h.Budget(ctx, &plugins.BudgetRequest{SandboxID: tt.id})
			if !errors.Is(err, tt.kind) || b != plugins.DefaultConfig().DefaultBudget {
				t.Errorf("budget: %+v, %v", b, err)
			}
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func TestRouteFailOpen(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "bad"), func(c *plugins.Config) { c.RouteFailOpen = true })
	d, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: "trap"})
	if !errors.Is(err, plugins.ErrTrap) || !d.Allow {
		t.Fatalf("got %+v, %v; want allow with ErrTrap", d, err)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestBreaker(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	h := newHost(t, plugin(t, "bad"), func(c *plugins.Config) {
		c.CallTimeout = 5 * time.Second
		c.BreakerFailures = 3
		c.BreakerCooldown = time.Minute
		c.Now = clock.Now
	})
	route := func(id string) (plugins.Decision, error) {
		return h.Route(ctx, &plugins.RouteRequest{SandboxID: id})
	}
	for range 3 {
		if _, err := route("trap"); !errors.Is(err, plugins.ErrTrap) {
			t.Fatalf("got %v, want ErrTrap", err)
		}
	}
	d, err := route("good")
	if !errors.Is(err, plugins.ErrBreakerOpen) || d.HTTPStatus() != 503 || !h.Stats().Route.BreakerIsOpen {
		t.Fatalf("after 3 failures: %+v, %v; want breaker open", d, err)
	}
	// Budget has its own breaker.
	if _, err := h.Budget(ctx, &plugins.BudgetRequest{SandboxID: "good"}); err != nil {
		t.Fatalf("budget: %v", err)
	}
	clock.Advance(time.Minute)
	// The trial call fails: open for another cooldown.
	if _, err := route("trap"); !errors.Is(err, plugins.ErrTrap) {
		t.Fatalf("trial: got %v, want ErrTrap", err)
	}
	if _, err := route("good"); !errors.Is(err, plugins.ErrBreakerOpen) {
		t.Fatalf("after failed trial: got %v, want ErrBreakerOpen", err)
	}
	clock.Advance(time.Minute)
	if d, err := route("good"); err != nil || !d.Allow {
		t.Fatalf("successful trial: %+v, %v", d, err)
	}
	if d, err := route("good"); err != nil || !d.Allow || h.Stats().Route.BreakerIsOpen {
		t.Fatalf("after recovery: %+v, %v", d, err)
	}
	if s := h.Stats().Route; s.BreakerOpen != 2 || s.Traps != 4 {
		t.Fatalf("stats %+v", s)
	}
}
