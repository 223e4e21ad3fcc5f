package wire

import "unsafe"

// The fast path of the route view decoder. With termination checks on (the host's
// deadline), wazero makes every Wasm loop header leave native code, and Go's Wasm output
// turns every taken branch and every entry into a function that branches into a pass
// through such a header: about 30 ns each on our machines, against 2–5 ns for the work
// itself. The general decoder took some 150 of them per request. This path takes a
// handful plus two per label and command argument: it reads every length as one byte,
// clamps indexes with arithmetic instead of testing them, calls nothing, and checks the
// result once at the end.

// routeViewFast decodes b into r when every length and count in it is below 128, as in
// realistic requests. It reports false, perhaps after changing r, when b needs the
// general decoder, to be accepted or rejected. It never panics.
func routeViewFast(b []byte, r *RouteView) bool {
	if len(b) == 0 || b[0] != TagRouteRequest {
		return false
	}
	// bad collects every length byte: bit 7 set means a longer length. Reads past the
	// end of b are clamped to its last byte; then the final offset is past the end.
	tenant := fastByte(b, 1)
	o := 2 + int(tenant)
	method := fastByte(b, o)
	o += 1 + int(method)
	route := fastByte(b, o)
	o += 1 + int(route)
	sandbox := fastByte(b, o)
	o += 1 + int(sandbox)
	bad := tenant | method | route | sandbox

	labels := fastByte(b, o)
	bad |= labels
	o++
	start := o
	for range labels & 0x7f {
		k := fastByte(b, o)
		o += 1 + int(k)
		v := fastByte(b, o)
		o += 1 + int(v)
		bad |= k | v
	}
	end := o

	count := fastByte(b, o)
	bad |= count
	o++
	c := int(count & 0x7f)
	if cap(r.Command) < c {
		r.Command = make([]string, c)
	}
	cmd := r.Command[:c]
	for i := range cmd {
		n := fastByte(b, o)
		bad |= n
		p := clamp(o+1, len(b))
		cmd[i] = aliasString(b[p:clamp(p+int(n), len(b))])
		o += 1 + int(n)
	}
	// One test: every taken branch costs.
	if int(bad>>7)|(o^len(b)) != 0 {
		r.Command = cmd[:0]
		return false
	}
	// Every offset read is now known to be inside b: no more clamping.
	p := 2
	tenantEnd := p + int(tenant)
	methodEnd := tenantEnd + 1 + int(method)
	routeEnd := methodEnd + 1 + int(route)
	sandboxEnd := routeEnd + 1 + int(sandbox)
	*r = RouteView{
		Tenant:    aliasString(b[p:tenantEnd]),
		Method:    aliasString(b[tenantEnd+1 : methodEnd]),
		Route:     aliasString(b[methodEnd+1 : routeEnd]),
		SandboxID: aliasString(b[routeEnd+1 : sandboxEnd]),
		Labels:    Labels{raw: b[start:end], n: int(labels)},
		Command:   cmd,
	}
	return true
}

// fastByte returns b[o], or the last byte of b when o is past it; b is not empty and o
// not negative.
func fastByte(b []byte, o int) byte { return b[clamp(o, len(b)-1)] }

// clamp returns min(i, limit) with arithmetic: the compiler turns min into a branch when
// its result is an index, and each taken branch costs.
func clamp(i, limit int) int {
	d := limit - i
	return i + d&(d>>63)
}

// aliasString returns s as a string sharing its bytes.
func aliasString(s []byte) string { return unsafe.String(unsafe.SliceData(s), len(s)) }
