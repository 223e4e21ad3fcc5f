// Command tiers is an example policy plugin: it sets a sandbox's budget from its "tier"
// label. free gets 2 processes, 5 s exec timeouts and a 60 s idle TTL; pro gets 32
// processes and 10 min exec timeouts; anything else gets the operator's defaults. The
// host clamps all of it to the operator's maxima.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tiers.wasm .
package main

import "github.com/sandgate/sandgate/plugins/guest"

func init() { guest.HandleBudget(budget) }

func budget(r *guest.BudgetRequest) guest.Budget {
	switch tier, _ := r.Labels.Get("tier"); tier {
	case "free":
		return guest.Budget{MaxProcesses: 2, MaxExecTimeoutMS: 5000, IdleTTLMS: 60000}
	case "pro":
		return guest.Budget{MaxProcesses: 32, MaxExecTimeoutMS: 600000}
	default:
		return guest.Budget{} // zero fields: the operator's defaults
	}
}

func main() {}
