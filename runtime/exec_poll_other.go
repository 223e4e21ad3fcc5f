//go:build !linux

package runtime

// execPolls keeps nothing where exec never runs.
type execPolls struct{}

func (*execPolls) close() {}
