package cluster

// Pins of deleted sandboxes. Deleting a sandbox writes one batch that removes every
// record of it and puts nothing (DeleteSandbox, no ops). When that batch is applied
// its pin is dropped in the same step, on every replica: the batch is fenced by the
// pin's epoch like any other, so only the owner admitted under the pin can drop it,
// and the records and the pin go in one log entry, so no crash can leave one
// without the other. A group holding such a batch is logged as cmdBatchesDrop
// rather than cmdBatches (same body): a replica that does not know the rule stops
// on the unknown type instead of keeping the pin the others dropped.
//
// Only an active pin at the batch's epoch is dropped. A pin in handoff (a drain
// moving it) is left to its handoff, and to the leader's sweep (pinsweep.go), which
// also catches pins whose records went some other way (a delete by an older build).

// batchesType is the command type of a group of batches: cmdBatchesDrop when one
// of them deletes its sandbox outright, else cmdBatches.
func batchesType(bs []*Batch) cmdType {
	for _, b := range bs {
		if deletesSandbox(b) {
			return cmdBatchesDrop
		}
	}
	return cmdBatches
}

// isBatches reports whether t is a command that carries sandbox batches.
func isBatches(t cmdType) bool { return t == cmdBatches || t == cmdBatchesDrop }

// deletesSandbox reports whether b leaves its sandbox with no record.
func deletesSandbox(b *Batch) bool { return b.DeleteSandbox && len(b.Ops) == 0 }

// dropDeleted returns s without the pins of the sandboxes whose last accepted batch
// in bs deletes them, provided the pin was active at that batch's epoch in before
// (the tables the batches were judged against), or s itself when none is dropped.
// Like markWritten it depends only on the tables and the verdicts.
func (s *state) dropDeleted(before *state, bs []*Batch, vs []batchVerdict) *state {
	last := make(map[string]*Batch)
	for i, b := range bs {
		if vs[i].code == batchApplied {
			last[b.Sandbox] = b
		}
	}
	var n *state
	for sb, b := range last {
		p, ok := before.pins[sb]
		if !deletesSandbox(b) || !ok || p.State != PartitionActive || p.Epoch != b.Epoch {
			continue
		}
		if n == nil {
			n = s.withPins()
		}
		delete(n.pins, sb)
	}
	if n == nil {
		return s
	}
	return n
}
