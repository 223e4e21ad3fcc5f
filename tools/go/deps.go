// Package tools pins the Go code generators the gateway tests run, and the runtime
// library the code they generate imports, in a module of its own so that the main
// module's dependencies stay those of sandgate itself.
package tools

import (
	// The generated Go client imports it; the clients test builds that client
	// against the version pinned here.
	_ "github.com/oapi-codegen/runtime"
)
