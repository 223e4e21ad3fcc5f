//lint:file-ignore U1000 the hooks and their buffers are used by the wasip1 exports in abi_wasip1.go, which a host build does not see

package guest

import "github.com/sandgate/sandgate/plugins/internal/wire"

// Budget is a sandbox's resource budget; a zero field means the operator's default.
// Every field is narrowed to the operator's maximum by the host. Network is one of
// NetworkNone, NetworkLoopback and NetworkHost (0: the operator's default).
type Budget = wire.Budget

// Network values of a [Budget], from the narrowest. The SDK speaks ABI version 2, the
// first with MemoryBytes, Pids, CPUMillis, DiskBytes and Network.
const (
	NetworkDefault  = wire.NetworkDefault
	NetworkNone     = wire.NetworkNone
	NetworkLoopback = wire.NetworkLoopback
	NetworkHost     = wire.NetworkHost
)

// BudgetRequest is what the host asks on sandbox create and after a reload: tenant,
// sandbox id and labels, whether it is asked again after a reload, and the operator's
// default and maximum budgets. It is a view: valid only during the hook.
type BudgetRequest = wire.BudgetView

// RouteRequest is what the host asks before serving each API request: tenant, method,
// route pattern, sandbox id and labels, and the command for exec, process and session
// exec. It is a view: valid only during the hook.
type RouteRequest = wire.RouteView

// Labels is a read-only view of a sandbox's labels: Get, Len and All.
type Labels = wire.Labels

// Decision is the answer to a [RouteRequest].
type Decision = wire.Decision

// Allow returns a decision that serves the request.
func Allow() Decision { return Decision{Allow: true} }

// AllowInPool returns a decision that serves a sandbox create and places the sandbox
// only on nodes whose labels include every entry of pool. The pool is kept with the
// sandbox and bounded as its labels are (64 labels, keys of 128 bytes, values of 512):
// the host takes a larger one for a failed call.
func AllowInPool(pool map[string]string) Decision { return Decision{Allow: true, Pool: pool} }

// Deny returns a decision that refuses the request with 403 forbidden and reason.
func Deny(reason string) Decision { return Decision{Status: 403, Reason: reason} }

// DenyTooMany returns a decision that refuses the request with 429 budget_exceeded and
// reason, for rate limits.
func DenyTooMany(reason string) Decision { return Decision{Status: 429, Reason: reason} }

var (
	initHook   func(config []byte) error
	budgetHook func(*BudgetRequest) Budget
	routeHook  func(*RouteRequest) Decision
)

// HandleInit registers f to receive the plugin configuration once per instance, before
// any other hook. An error fails the instance and the host reports its message.
func HandleInit(f func(config []byte) error) { initHook = f }

// HandleBudget registers f to decide sandbox budgets. The request, its strings, map and
// slice are valid only until f returns: copy what you keep.
func HandleBudget(f func(*BudgetRequest) Budget) { budgetHook = f }

// HandleRoute registers f to decide whether requests are served. The request, its
// strings, map and slice are valid only until f returns: copy what you keep. Decisions
// are encoded straight away, so a Decision may refer to anything.
func HandleRoute(f func(*RouteRequest) Decision) { routeHook = f }

// Level is a log level, with the values of log/slog.
type Level int32

// Log levels.
const (
	LevelDebug Level = -4
	LevelInfo  Level = 0
	LevelWarn  Level = 4
	LevelError Level = 8
)

// Scratch state reused from call to call; one call runs at a time per instance.
var (
	out       []byte
	budgetReq BudgetRequest
	routeReq  RouteRequest
)

func doInit(config []byte) error {
	if initHook == nil {
		return nil
	}
	return initHook(config)
}

func doBudget(in []byte) ([]byte, error) {
	if err := wire.DecodeBudgetView(in, &budgetReq); err != nil {
		return nil, err
	}
	var b Budget
	if budgetHook != nil {
		b = budgetHook(&budgetReq)
	}
	out = wire.AppendBudget(out[:0], &b)
	return out, nil
}

func doRoute(in []byte) ([]byte, error) {
	if err := wire.DecodeRouteView(in, &routeReq); err != nil {
		return nil, err
	}
	d := Allow()
	if routeHook != nil {
		d = routeHook(&routeReq)
	}
	out = wire.AppendDecision(out[:0], &d)
	return out, nil
}
