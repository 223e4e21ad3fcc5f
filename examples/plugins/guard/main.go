// Command guard is an example policy plugin: it denies exec, process and session
// commands that contain an entry of its deny-list, with the reason
// "blocked by guard: <entry>", except for the tenant "admin".
//
// The deny-list is the plugin configuration (sandgate serve --policy-config FILE), one
// entry per line; an empty configuration means the default list: "mkfs" and ":(){".
//
// The search is written for speed under the host's deadline, which makes every loop
// iteration and every call in Go compiled to Wasm cost about 30 ns: see scan.go.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o guard.wasm .
package main

import (
	"strings"

	"github.com/sandgate/sandgate/plugins/guest"
)

var denied = []string{"mkfs", ":(){"}

func init() {
	index(denied)
	guest.HandleInit(configure)
	guest.HandleRoute(route)
}

func configure(config []byte) error {
	var list []string
	for line := range strings.Lines(string(config)) {
		if e := strings.TrimSpace(line); e != "" {
			list = append(list, e)
		}
	}
	if len(list) > 0 {
		denied = list
		index(denied)
	}
	return nil
}

// cmd is reused from call to call: the command line joined with spaces, so an entry
// spanning arguments is found too. Reusing it keeps the hot path allocation-free.
var cmd []byte

func route(r *guest.RouteRequest) guest.Decision {
	if len(r.Command) == 0 || r.Tenant == "admin" {
		return guest.Allow()
	}
	var n int
	cmd, n = join(cmd[:0], r.Command)
	if e, ok := find(cmd, n); ok {
		return guest.Deny("blocked by guard: " + e)
	}
	return guest.Allow()
}

func main() {}
