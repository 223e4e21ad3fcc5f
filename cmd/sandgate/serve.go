package main

import (
	"context"
	"fmt"
	"io"
)

// cmdServe runs a gateway node. This branch builds the client only; the integrator
// replaces this file with the real server on merge.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "serve: not built on this branch")
	return 2
}
