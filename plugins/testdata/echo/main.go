// Command echo is a well-behaved test plugin that exercises every host function.
//
// Route: denies (403) a command containing "deny", denies (429) a tenant's requests past
// the rate in the config's first byte per minute (counter_add), and at create places
// the sandbox in the pool named by its "pool" label. Budget: max_processes from the
// "procs" label and memory_bytes from the "memory" label (digits), network from the
// "network" label (none, loopback or host), everything else default. Init fails on
// config "fail".
package main

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/plugins/guest"
)

var rate int64

func init() {
	guest.HandleInit(func(config []byte) error {
		if string(config) == "fail" {
			return errors.New("config says fail")
		}
		if len(config) > 0 {
			rate = int64(config[0])
		}
		guest.Log(guest.LevelInfo, "echo plugin ready")
		return nil
	})
	guest.HandleRoute(func(r *guest.RouteRequest) guest.Decision {
		if slices.Contains(r.Command, "deny") {
			return guest.Deny("command says deny")
		}
		if rate > 0 && guest.CounterAdd("tenant:"+r.Tenant, 1, time.Minute) > rate {
			return guest.DenyTooMany("rate limit")
		}
		if p, ok := r.Labels.Get("pool"); ok && r.Route == "POST /v1/sandboxes" {
			return guest.AllowInPool(map[string]string{"pool": p})
		}
		if guest.Now().Year() < 2000 {
			return guest.Deny("host clock is wrong")
		}
		return guest.Allow()
	})
	guest.HandleBudget(func(r *guest.BudgetRequest) guest.Budget {
		procs, _ := r.Labels.Get("procs")
		n, _ := strconv.ParseInt(procs, 10, 64)
		memory, _ := r.Labels.Get("memory")
		mem, _ := strconv.ParseInt(memory, 10, 64)
		b := guest.Budget{MaxProcesses: n, MemoryBytes: mem}
		switch net, _ := r.Labels.Get("network"); net {
		case "none":
			b.Network = guest.NetworkNone
		case "loopback":
			b.Network = guest.NetworkLoopback
		case "host":
			b.Network = guest.NetworkHost
		}
		return b
	})
}

func main() {}
