// Command guard is an example policy plugin: it denies exec, process and session
// commands that contain an entry of its deny-list, with the reason
// "blocked by guard: <entry>", except for the tenant "admin".
//
// The deny-list is the plugin configuration (sandgate serve --policy-config FILE), one
// entry per line; an empty configuration means the default list: "mkfs" and ":(){".
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o guard.wasm .
package main

import (
	"bytes"
	"strings"

	"github.com/sandgate/sandgate/plugins/guest"
)

var denied = []string{"mkfs", ":(){"}

func init() {
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
	cmd = cmd[:0]
	for i, a := range r.Command {
		if i > 0 {
			cmd = append(cmd, ' ')
		}
		cmd = append(cmd, a...)
	}
	for _, e := range denied {
		if bytes.Contains(cmd, []byte(e)) {
			return guest.Deny("blocked by guard: " + e)
		}
	}
	return guest.Allow()
}

func main() {}
