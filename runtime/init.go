package runtime

import "github.com/sandgate/sandgate/runtime/internal/nsinit"

// MaybeRunInit runs this process as a sandbox's init and exits, if it was started as
// one (the namespace driver re-executes the server's own binary for each sandbox); it
// returns at once otherwise. Call it first thing in main, before flags are parsed or
// anything is started.
func MaybeRunInit() {
	if nsinit.IsInit() {
		nsinit.Main()
	}
}
