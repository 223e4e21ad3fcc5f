// Package guest is the Go SDK for writing sandgate policy plugins. A plugin is a Go
// main package built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
//
// It registers its hooks from an init function; main is never run but must exist:
//
//	func init() {
//		guest.HandleRoute(func(r *guest.RouteRequest) guest.Decision {
//			if r.Tenant == "blocked" {
//				return guest.Deny("tenant blocked")
//			}
//			return guest.Allow()
//		})
//	}
//
//	func main() {}
//
// # What the SDK does
//
// Importing the package exports the ABI functions of plugins/ABI.md (sandgate_abi_version,
// sandgate_alloc, sandgate_init, sandgate_budget, sandgate_route), decodes each request
// with the codec shared with the host, calls the registered hook and encodes its answer.
// A hook that is not registered answers "no opinion": the operator's default budget, or
// allow. [Log], [Now] and [CounterAdd] call the host functions.
//
// # Speed
//
// Go compiled to Wasm runs several times slower than native Go and allocates slowly
// (about a microsecond per allocation, ten for a small map), so the SDK decodes into
// views that allocate nothing: request strings alias the request buffer, labels are
// scanned in place (r.Labels.Get("tier")), and the command slice is reused. A request
// is valid only during its hook. Hooks on the hot path should avoid allocating too.
//
// The host runs every call under a deadline with wazero's termination checks, which
// leave native code at every Wasm loop header. Go's Wasm output passes through such a
// header on every taken branch, every loop iteration and every entry into a function
// that branches, so each of those costs about 30 ns, ten times the work around it. The
// SDK's decoder and encoder are written to take few (plugins/internal/wire/viewfast.go);
// a hook that scans bytes one at a time pays 30 ns per byte. examples/plugins/guard
// shows a search that looks at eight bytes per iteration instead.
//
// # Concurrency
//
// The host runs one call at a time per instance, so hooks need no locking; package state
// persists from call to call within one instance but is not shared between instances.
// Register hooks from init only.
//
// # Outside Wasm
//
// Built for any other GOOS the package still compiles (so go vet ./... covers plugins):
// [Log] goes to standard error, [Now] is time.Now, and [CounterAdd] keeps counters in
// process memory. Test a plugin through plugins.Host, as the examples do.
package guest
