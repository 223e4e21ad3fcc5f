package wire

import "encoding/binary"

// AppendBudgetRequest appends the encoding of r to dst.
func AppendBudgetRequest(dst []byte, r *BudgetRequest) []byte {
	dst = append(dst, TagBudgetRequest)
	dst = appendString(dst, r.Tenant)
	dst = appendString(dst, r.SandboxID)
	dst = appendLabels(dst, r.Labels)
	if r.Reload {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = appendBudgetFields(dst, &r.Defaults)
	return appendBudgetFields(dst, &r.Max)
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

// AppendBudget appends the encoding of a plugin's budget answer to dst. Negative fields
// are encoded as 0 (the operator's default).
func AppendBudget(dst []byte, b *Budget) []byte {
	dst = append(dst, TagBudget)
	return appendBudgetFields(dst, b)
}

// AppendDecision appends the encoding of a plugin's route answer to dst.
func AppendDecision(dst []byte, d *Decision) []byte {
	dst = append(dst, TagDecision)
	if d.Allow {
		dst = append(dst, VerdictAllow)
	} else {
		dst = append(dst, VerdictDeny)
	}
	st := d.Status
	if st < 0 {
		st = 0
	}
	dst = binary.AppendUvarint(dst, uint64(st))
	dst = appendString(dst, d.Reason)
	return appendLabels(dst, d.Pool)
}

func appendBudgetFields(dst []byte, b *Budget) []byte {
	for _, v := range [...]int64{b.IdleTTLMS, b.MaxDurationMS, b.MaxProcesses, b.MaxExecTimeoutMS, b.OutputBufferBytes} {
		if v < 0 {
			v = 0
		}
		dst = binary.AppendUvarint(dst, uint64(v))
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
