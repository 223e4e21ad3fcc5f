package wire

import (
	"encoding/binary"
	"slices"
)

// AppendBudgetRequest appends the encoding of r to dst, in ABI version [Version].
func AppendBudgetRequest(dst []byte, r *BudgetRequest) []byte {
	return AppendBudgetRequestV(dst, r, Version)
}

// AppendBudgetRequestV appends the encoding of r in ABI version v to dst. Version 1
// leaves out the budget fields it does not have.
func AppendBudgetRequestV(dst []byte, r *BudgetRequest, v int) []byte {
	dst = append(dst, TagBudgetRequest)
	dst = appendString(dst, r.Tenant)
	dst = appendString(dst, r.SandboxID)
	dst = appendLabels(dst, r.Labels)
	if r.Reload {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = appendBudgetFields(dst, &r.Defaults, v)
	return appendBudgetFields(dst, &r.Max, v)
}

// AppendRouteRequest appends the encoding of r to dst.
func AppendRouteRequest(dst []byte, r *RouteRequest) []byte {
	dst = append(dst, TagRouteRequest)
	dst = appendString(dst, r.Tenant)
	dst = appendString(dst, r.Method)
	dst = appendString(dst, r.Route)
	dst = appendString(dst, r.SandboxID)
	dst = appendLabels(dst, r.Labels)
	dst = binary.AppendUvarint(dst, uint64(len(r.Command)))
	for _, a := range r.Command {
		dst = appendString(dst, a)
	}
	return dst
}

// AppendBudget appends the encoding of a plugin's budget answer to dst, in ABI version
// [Version]. Negative fields, and a network other than the four values, are encoded as 0
// (the operator's default).
func AppendBudget(dst []byte, b *Budget) []byte { return AppendBudgetV(dst, b, Version) }

// AppendBudgetV is AppendBudget in ABI version v.
func AppendBudgetV(dst []byte, b *Budget, v int) []byte {
	dst = append(dst, TagBudget)
	return appendBudgetFields(dst, b, v)
}

// AppendDecision appends the encoding of a plugin's route answer to dst.
func AppendDecision(dst []byte, d *Decision) []byte {
	verdict := VerdictDeny
	if d.Allow {
		verdict = VerdictAllow
	}
	st := max(d.Status, 0)
	if st < 1<<14 && len(d.Reason) < 0x80 && d.Pool == nil {
		return appendShortDecision(dst, verdict, st, d.Reason)
	}
	return appendDecision(dst, verdict, st, d.Reason, d.Pool)
}

// appendDecision is the general encoder behind AppendDecision.
func appendDecision(dst []byte, verdict byte, status int, reason string, pool map[string]string) []byte {
	dst = append(dst, TagDecision, verdict)
	dst = binary.AppendUvarint(dst, uint64(status))
	dst = appendString(dst, reason)
	return appendLabels(dst, pool)
}

// appendShortDecision appends a decision without a pool whose status fits in two bytes
// and reason length in one: every real answer. It makes one capacity test, because the
// guest runs it under termination checks, where every taken branch is costly (see
// viewfast.go).
func appendShortDecision(dst []byte, verdict byte, status int, reason string) []byte {
	n := len(dst)
	w := 1 // bytes of the status
	if status >= 0x80 {
		w = 2
	}
	end := n + 4 + w + len(reason)
	if cap(dst) >= end { // this order makes the usual case the fall-through
		dst = dst[:end]
	} else {
		dst = slices.Grow(dst, end-n)[:end]
	}
	dst[n], dst[n+1] = TagDecision, verdict
	dst[n+2] = byte(status) | byte(w-1)<<7 // uvarint: low bits, continuation if two bytes
	dst[n+3] = byte(status >> 7)           // high bits, overwritten next when w is 1
	dst[n+2+w] = byte(len(reason))
	copy(dst[n+3+w:], reason)
	dst[end-1] = 0 // no pool
	return dst
}

func appendBudgetFields(dst []byte, b *Budget, version int) []byte {
	fields := [...]int64{b.IdleTTLMS, b.MaxDurationMS, b.MaxProcesses, b.MaxExecTimeoutMS, b.OutputBufferBytes,
		b.MemoryBytes, b.Pids, b.CPUMillis, b.DiskBytes}
	n := 5 // version 1
	if version >= 2 {
		n = len(fields)
	}
	for _, v := range fields[:n] {
		if v < 0 {
			v = 0
		}
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	if version >= 2 {
		net := b.Network
		if net > NetworkHost {
			net = NetworkDefault
		}
		dst = append(dst, net)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendLabels(dst []byte, m map[string]string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	for k, v := range m {
		dst = appendString(dst, k)
		dst = appendString(dst, v)
	}
	return dst
}
