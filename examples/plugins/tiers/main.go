// Command tiers is an example policy plugin: it sets a sandbox's budget from its "tier"
// label. free gets 2 processes, 5 s exec timeouts, a 60 s idle TTL, 256 MiB of memory
// and no network; pro gets 32 processes, 10 min exec timeouts, 4 GiB of memory, two
// cores and the host's network; anything else gets the operator's defaults. The host
// clamps all of it to the operator's maxima.
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
		return guest.Budget{MaxProcesses: 2, MaxExecTimeoutMS: 5000, IdleTTLMS: 60000,
			MemoryBytes: 256 << 20, Network: guest.NetworkNone}
	case "pro":
		return guest.Budget{MaxProcesses: 32, MaxExecTimeoutMS: 600000,
			MemoryBytes: 4 << 30, CPUMillis: 2000, Network: guest.NetworkHost}
	default:
		return guest.Budget{} // zero fields: the operator's defaults
	}
}

func main() {}
