//go:build wasip1

package guest

import (
	"time"
	"unsafe"

	"github.com/sandgate/sandgate/plugins/internal/wire"
)

//go:wasmimport sandgate log
func hostLog(level int32, msg unsafe.Pointer, n int32)

//go:wasmimport sandgate clock_ms
func hostClockMS() int64

//go:wasmimport sandgate counter_add
func hostCounterAdd(key unsafe.Pointer, n int32, delta int64, windowMS int64) int64

//go:wasmimport sandgate error
func hostError(msg unsafe.Pointer, n int32)

// in is the request buffer handed out by sandgate_alloc; it stays valid (and referenced,
// so the collector keeps it) until the next allocation.
var in = make([]byte, 4096)

//go:wasmexport sandgate_abi_version
func abiVersion() int32 { return wire.Version }

//go:wasmexport sandgate_alloc
func alloc(size int32) unsafe.Pointer {
	if int(size) > len(in) {
		in = make([]byte, size)
	}
	return unsafe.Pointer(unsafe.SliceData(in))
}

//go:wasmexport sandgate_init
func initExport(p unsafe.Pointer, n int32) int32 {
	config := make([]byte, n)
	copy(config, unsafe.Slice((*byte)(p), n))
	if err := doInit(config); err != nil {
		reportError(err.Error())
		return 1
	}
	return 0
}

//go:wasmexport sandgate_budget
func budgetExport(p unsafe.Pointer, n int32) uint64 {
	out, err := doBudget(request(p, n))
	if err == nil {
		return pack(out)
	}
	return fail(err)
}

//go:wasmexport sandgate_route
func routeExport(p unsafe.Pointer, n int32) uint64 {
	out, err := doRoute(request(p, n))
	if err == nil { // this order makes success the fall-through
		return pack(out)
	}
	return fail(err)
}

// request returns the n request bytes at p. Every call and taken branch costs ~30 ns
// under the host's deadline (see doc.go, "Speed"), and unsafe.Slice calls an overflow
// check; a length over wire.MaxMessage traps instead.
func request(p unsafe.Pointer, n int32) []byte {
	return (*[wire.MaxMessage]byte)(p)[:uint32(n):uint32(n)]
}

// pack returns the (pointer << 32 | length) answer of a hook.
func pack(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

// fail reports err to the host and returns the answer of a failed hook.
func fail(err error) uint64 {
	reportError(err.Error())
	return 0
}

func reportError(msg string) {
	hostError(unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// Log writes msg to the gateway's log at level, tagged with the plugin.
func Log(level Level, msg string) {
	hostLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// Now returns the host's wall clock, in milliseconds.
func Now() time.Time { return time.UnixMilli(hostClockMS()) }

// CounterAdd adds delta to the host-side counter key in the current fixed window of the
// given length and returns the counter's new value. Counters are shared by every
// instance of the plugin and survive reloads, so they suit rate limits.
func CounterAdd(key string, delta int64, window time.Duration) int64 {
	return hostCounterAdd(unsafe.Pointer(unsafe.StringData(key)), int32(len(key)), delta, window.Milliseconds())
}
