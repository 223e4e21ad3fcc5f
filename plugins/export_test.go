package plugins

import "context"

// InstanceMemoryBytes returns the linear memory size of one pooled instance of the
// module in service, for benchmarks.
func InstanceMemoryBytes(h *Host) (uint32, error) {
	g := h.ref()
	if g == nil {
		return 0, ErrClosed
	}
	defer g.unref()
	in, _, err := g.acquire(context.Background())
	if err != nil {
		return 0, err
	}
	defer g.release(in, false)
	return in.mem.Size(), nil
}
