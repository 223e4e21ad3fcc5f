package wire

import (
	"encoding/binary"
	"iter"
	"unsafe"
)

// Views are what the guest decodes into. Go compiled to Wasm allocates slowly (about a
// microsecond per allocation, ten for a small map), so a view allocates nothing in the
// steady state: its strings alias the request bytes, its labels are scanned in place,
// and its Command slice is reused. A view is valid only while the bytes it was decoded
// from are unchanged. The host sends valid UTF-8, so views do not check it.

// Labels is a read-only view of an encoded label map. The zero value is empty.
type Labels struct {
	raw []byte // count-less encoded key, value pairs
	n   int
}

// Len returns the number of labels.
func (l Labels) Len() int { return l.n }

// Get returns the value of key and whether it is present.
func (l Labels) Get(key string) (string, bool) {
	for k, v := range l.All() {
		if k == key {
			return v, true
		}
	}
	return "", false
}

// All iterates over the labels in encoded order.
func (l Labels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		b := l.raw
		for range l.n {
			var k, v string
			k, b = viewString(b)
			v, b = viewString(b)
			if !yield(k, v) {
				return
			}
		}
	}
}

// viewString reads a string the decoder already checked.
func viewString(b []byte) (string, []byte) {
	n, w := binary.Uvarint(b)
	b = b[w:]
	if n == 0 {
		return "", b
	}
	return unsafe.String(&b[0], int(n)), b[n:]
}

// RouteView is the guest's view of a [RouteRequest].
type RouteView struct {
	Tenant    string
	Method    string
	Route     string
	SandboxID string
	Labels    Labels
	Command   []string
}

// BudgetView is the guest's view of a [BudgetRequest].
type BudgetView struct {
	Tenant    string
	SandboxID string
	Labels    Labels
	Reload    bool
	Defaults  Budget
	Max       Budget
}

// labelsView checks the label map at the cursor and returns a view of it.
func (d *decoder) labelsView() Labels {
	n := d.count(MaxLabels)
	if d.err != nil || n == 0 {
		return Labels{}
	}
	start := d.off
	for range 2 * n {
		d.string()
	}
	if d.err != nil {
		return Labels{}
	}
	return Labels{raw: d.b[start:d.off], n: n}
}

// DecodeRouteView decodes a route request into a view aliasing b, reusing r.Command.
func DecodeRouteView(b []byte, r *RouteView) error {
	if routeViewFast(b, r) {
		return nil
	}
	return decodeRouteView(b, r)
}

// decodeRouteView is the general decoder behind DecodeRouteView.
func decodeRouteView(b []byte, r *RouteView) error {
	d := decoder{b: b, borrow: true}
	d.start(TagRouteRequest)
	r.Tenant = d.string()
	r.Method = d.string()
	r.Route = d.string()
	r.SandboxID = d.string()
	r.Labels = d.labelsView()
	n := d.count(MaxCommand)
	r.Command = r.Command[:0]
	if d.err == nil && n > len(d.b)-d.off {
		d.fail("command past end")
	}
	for i := 0; i < n && d.err == nil; i++ {
		r.Command = append(r.Command, d.string())
	}
	return d.finish()
}

// DecodeBudgetView decodes a budget request in ABI version [Version] into a view
// aliasing b.
func DecodeBudgetView(b []byte, r *BudgetView) error {
	d := decoder{b: b, borrow: true, v: Version}
	d.start(TagBudgetRequest)
	r.Tenant = d.string()
	r.SandboxID = d.string()
	r.Labels = d.labelsView()
	switch d.byte() {
	case 0:
		r.Reload = false
	case 1:
		r.Reload = true
	default:
		d.fail("bad flag")
	}
	d.budget(&r.Defaults)
	d.budget(&r.Max)
	return d.finish()
}
