package wire

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
	"unsafe"
)

// decoder reads one message; the first error sticks and later reads return zero values.
type decoder struct {
	b      []byte
	off    int
	err    *DecodeError
	borrow bool // strings alias b and are not checked for UTF-8 (views)
	v      int  // ABI version of budgets; 0 means Version
}

func (d *decoder) fail(reason string) {
	if d.err == nil {
		d.err = &DecodeError{Offset: d.off, Reason: reason}
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("unexpected end")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	// One-byte fast path: lengths and counts are almost always < 128, and a call to
	// binary.Uvarint is costly in Go compiled to Wasm.
	if d.off < len(d.b) && d.b[d.off] < 0x80 {
		v := uint64(d.b[d.off])
		d.off++
		return v
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad integer")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) int() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.fail("integer out of range")
		return 0
	}
	return int64(v)
}

func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(limit) {
		d.fail("count over limit")
		return 0
	}
	return int(v)
}

func (d *decoder) string() string {
	var n int
	// Inline one-byte length: every non-inlined call is costly in Go compiled to Wasm
	// with termination checks on (see BENCHMARKS.md, "Policy plugins").
	if d.err == nil && d.off < len(d.b) && d.b[d.off] < 0x80 {
		n = int(d.b[d.off])
		d.off++
	} else if n = d.count(MaxString); d.err != nil {
		return ""
	}
	if n > len(d.b)-d.off {
		d.fail("string past end")
		return ""
	}
	s := d.b[d.off : d.off+n]
	if !d.borrow && !utf8.Valid(s) {
		d.fail("string not UTF-8")
		return ""
	}
	d.off += n
	if d.borrow {
		if n == 0 {
			return ""
		}
		return unsafe.String(&s[0], n)
	}
	return string(s)
}

func (d *decoder) labels() map[string]string {
	n := d.count(MaxLabels)
	if d.err != nil || n == 0 {
		return nil
	}
	// Each entry needs at least two bytes, which bounds the allocation by the input.
	if n > (len(d.b)-d.off)/2 {
		d.fail("labels past end")
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.string()
		v := d.string()
		if d.err != nil {
			return nil
		}
		if _, dup := m[k]; dup {
			d.fail("duplicate label")
			return nil
		}
		m[k] = v
	}
	return m
}

func (d *decoder) budget(b *Budget) {
	b.IdleTTLMS = d.int()
	b.MaxDurationMS = d.int()
	b.MaxProcesses = d.int()
	b.MaxExecTimeoutMS = d.int()
	b.OutputBufferBytes = d.int()
	if d.v == 1 {
		b.MemoryBytes, b.Pids, b.CPUMillis, b.DiskBytes, b.Network = 0, 0, 0, 0, NetworkDefault
		return
	}
	b.MemoryBytes = d.int()
	b.Pids = d.int()
	b.CPUMillis = d.int()
	b.DiskBytes = d.int()
	b.Network = d.byte()
	if d.err == nil && b.Network > NetworkHost {
		d.off--
		d.fail("bad network")
		b.Network = NetworkDefault
	}
}

func (d *decoder) start(tag byte) {
	if len(d.b) > MaxMessage {
		d.fail("message too long")
		return
	}
	if d.byte() != tag && d.err == nil {
		d.off--
		d.fail("wrong tag")
	}
}

func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return d.err
	}
	return nil
}

// DecodeBudgetRequest decodes a [BudgetRequest] in ABI version [Version] from b. It
// never keeps a reference to b.
func DecodeBudgetRequest(b []byte, r *BudgetRequest) error {
	return DecodeBudgetRequestV(b, r, Version)
}

// DecodeBudgetRequestV is DecodeBudgetRequest in ABI version v; a version 1 request
// leaves the fields it does not have zero.
func DecodeBudgetRequestV(b []byte, r *BudgetRequest, v int) error {
	d := decoder{b: b, v: v}
	return d.budgetRequest(r)
}

func (d *decoder) budgetRequest(r *BudgetRequest) error {
	d.start(TagBudgetRequest)
	r.Tenant = d.string()
	r.SandboxID = d.string()
	r.Labels = d.labels()
	switch d.byte() {
	case 0:
		r.Reload = false
	case 1:
		r.Reload = true
	default:
		d.off--
		d.fail("bad flag")
	}
	d.budget(&r.Defaults)
	d.budget(&r.Max)
	return d.finish()
}

// DecodeRouteRequest decodes a [RouteRequest] from b. It never keeps a reference to b.
func DecodeRouteRequest(b []byte, r *RouteRequest) error {
	d := decoder{b: b}
	return d.routeRequest(r)
}

func (d *decoder) routeRequest(r *RouteRequest) error {
	d.start(TagRouteRequest)
	r.Tenant = d.string()
	r.Method = d.string()
	r.Route = d.string()
	r.SandboxID = d.string()
	r.Labels = d.labels()
	n := d.count(MaxCommand)
	r.Command = nil
	if d.err == nil && n > 0 {
		if n > len(d.b)-d.off {
			d.fail("command past end")
		} else {
			for range n {
				r.Command = append(r.Command, d.string())
			}
		}
	}
	return d.finish()
}

// DecodeBudget decodes a plugin's budget answer in ABI version [Version] from b. It
// never keeps a reference to b.
func DecodeBudget(b []byte, out *Budget) error { return DecodeBudgetV(b, out, Version) }

// DecodeBudgetV is DecodeBudget in ABI version v: a version 1 answer has no value for
// the fields added later, which are left zero ("the operator's default").
func DecodeBudgetV(b []byte, out *Budget, v int) error {
	d := decoder{b: b, v: v}
	d.start(TagBudget)
	d.budget(out)
	return d.finish()
}

// DecodeDecision decodes a plugin's route answer from b. It never keeps a reference to b.
// A status other than 0, 403 or 429 on a denial, or any status on an allow, is malformed.
func DecodeDecision(b []byte, out *Decision) error {
	d := decoder{b: b}
	d.start(TagDecision)
	switch d.byte() {
	case VerdictAllow:
		out.Allow = true
	case VerdictDeny:
		out.Allow = false
	default:
		d.off--
		d.fail("bad verdict")
	}
	st := d.uvarint()
	if d.err == nil {
		switch {
		case out.Allow && st != 0:
			d.fail("status on allow")
		case !out.Allow && st != 0 && st != 403 && st != 429:
			d.fail("status not 403 or 429")
		}
	}
	out.Status = int(st)
	out.Reason = d.string()
	out.Pool = d.labels()
	return d.finish()
}
