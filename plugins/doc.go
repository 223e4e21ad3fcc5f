// Package plugins loads, sandboxes, pools, calls and hot-reloads WebAssembly policy
// plugins with wazero. A plugin decides sandbox budgets and whether API requests are
// served (gateway/openapi.json describes the HTTP side); plugins/ABI.md is the contract a module follows,
// and [github.com/sandgate/sandgate/plugins/guest] is the Go SDK for writing one. The
// package imports nothing else of ours.
//
// # Entry points
//
//   - [New] loads Config.Path (or, with no path, the built-in policy: allow everything,
//     DefaultBudget for every sandbox) and returns a [*Host].
//   - [Host.Route] on every request: allow, or deny with a status and a reason; at
//     sandbox create it may also return a node pool (label selector).
//   - [Host.Budget] on sandbox create, and again for live sandboxes after a reload
//     (Config.OnReload tells when): the budget, clamped to Config.MaxBudget.
//   - [Host.Reload] for SIGHUP; a watcher polls the file too (Config.PollInterval).
//   - [Host.Stats] for a snapshot of the counters; the Host is also a
//     prometheus.Collector.
//   - [Host.Close] when the gateway stops.
//
// # How a call runs
//
//  1. The host takes a reference on the module in service and a free instance from its
//     pool (waiting at most until the call's deadline, Config.CallTimeout, 20 ms).
//  2. It encodes the request straight into the instance's request buffer, makes one
//     Wasm call under the deadline with close-on-context-done, and decodes the answer.
//     The deadline is a timer each instance keeps and re-arms (callctx.go), not a
//     context.WithTimeout per call.
//  3. An instance that trapped, timed out or answered garbage is closed, never reused;
//     one past RecycleAfterCalls or RecycleMemoryBytes is recycled. A goroutine of the
//     module's own refills the pool off the request path.
//  4. Failures are answered by the failure policy (route: deny with 503 by default, or
//     allow with RouteFailOpen; budget: DefaultBudget), logged (rate limited), counted,
//     and fed to a per-hook circuit breaker.
//
// # Reloads
//
// A new file is compiled (from the on-disk compilation cache when known), checked and
// its pool filled before it is swapped in with an atomic pointer. Calls in flight finish
// on the old module, which is closed, runtime and all, when its last call returns:
// reference counting, no finalizers. A file that fails keeps the old module in service;
// the error is returned, logged and counted.
//
// # Concurrency
//
// A Host is safe for concurrent use. Calls run the guest on the caller's goroutine. The
// Host owns two kinds of goroutines: the file watcher, and one refill goroutine per
// loaded module; Close stops and waits for all of them.
//
// # Caveats
//
//   - Go plugins run Go compiled to Wasm, several times slower than native Go, and the
//     deadline's termination checks cost ~30 ns per taken branch in it: a decision of
//     the guard example costs ~4 µs, a WAT one ~2 µs (BENCHMARKS.md, "Policy plugins").
//   - wazero starts one goroutine per call to enforce the deadline; on a machine
//     starved of CPU, a call can be timed out by scheduling delays alone.
//   - Host-side counters (counter_add) live in memory on one node; they are not shared
//     across a cluster.
package plugins
