// Command bad is the misbehaving test plugin. It implements plugins/ABI.md by hand,
// without the SDK, so it can break every rule. Both hooks misbehave according to the
// sandbox id and answer well (allow / no-opinion budget) for any other id:
//
//	trap     out-of-bounds memory access: a Wasm trap
//	loop     loops forever
//	oom      allocates until the memory limit, so the Go runtime dies
//	garbage  answers bytes that do not decode
//	badptr   answers a pointer outside its memory
//	zero     reports an error through the error host function and answers 0
//
// One binary with six behaviours instead of six binaries keeps the test suite's
// compile time down (each Go module takes ~20 s to compile under -race).
package main

import (
	"unsafe"

	"github.com/sandgate/sandgate/plugins/internal/wire"
)

//go:wasmimport sandgate error
func hostError(msg unsafe.Pointer, n int32)

var (
	in      = make([]byte, 4096)
	out     []byte
	routeIn wire.RouteRequest
	budIn   wire.BudgetRequest
	junk    = []byte{wire.TagDecision, 0x07, 0xff, 0xff, 0xff}
	hoard   [][]byte
	spins   uint64
	sink    = uintptr(0xFFFFFFF0)
)

//go:wasmexport sandgate_abi_version
func version() int32 { return wire.Version }

//go:wasmexport sandgate_alloc
func alloc(n int32) unsafe.Pointer {
	if int(n) > len(in) {
		in = make([]byte, n)
	}
	return unsafe.Pointer(unsafe.SliceData(in))
}

//go:wasmexport sandgate_route
func route(p unsafe.Pointer, n int32) uint64 {
	if wire.DecodeRouteRequest(unsafe.Slice((*byte)(p), n), &routeIn) != nil {
		return 0
	}
	if r, bad := misbehave(routeIn.SandboxID); bad {
		return r
	}
	out = wire.AppendDecision(out[:0], &wire.Decision{Allow: true})
	return pack(out)
}

//go:wasmexport sandgate_budget
func budget(p unsafe.Pointer, n int32) uint64 {
	if wire.DecodeBudgetRequest(unsafe.Slice((*byte)(p), n), &budIn) != nil {
		return 0
	}
	if r, bad := misbehave(budIn.SandboxID); bad {
		return r
	}
	out = wire.AppendBudget(out[:0], &wire.Budget{})
	return pack(out)
}

func misbehave(id string) (uint64, bool) {
	switch id {
	case "trap":
		*(*byte)(unsafe.Pointer(sink)) = 1
	case "loop":
		for {
			spins++
		}
	case "oom":
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			hoard = append(hoard, b)
		}
	case "garbage":
		return pack(junk), true
	case "badptr":
		return 0xFFFFFF00<<32 | 64, true
	case "zero":
		msg := "cannot decide"
		hostError(unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
		return 0, true
	}
	return 0, false
}

func pack(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

func main() {}
