package cluster

import (
	"bytes"
	"fmt"
)

// The body of cmdBatches:
//
//	count uvarint, then per batch:
//	  sandbox string, epoch uvarint, flags byte (1: DeleteSandbox),
//	  op count uvarint, then per op: flags byte (1: delete), key bytes, [value bytes]
//
// A group of no batches is valid: it is the sync entry (Node.sync) whose index a
// reader waits for.
const (
	flagDeleteSandbox byte = 1
	flagDeleteKey     byte = 1
)

func encodeBatches(bs []*Batch) []byte {
	size := 1 + 4
	for _, b := range bs {
		size += 16 + len(b.Sandbox)
		for _, op := range b.Ops {
			size += 12 + len(op.Key) + len(op.Value)
		}
	}
	e := encoder{b: make([]byte, 0, size)}
	e.byte(byte(batchesType(bs)))
	e.uvarint(uint64(len(bs)))
	for _, b := range bs {
		e.string(b.Sandbox)
		e.uvarint(b.Epoch)
		var f byte
		if b.DeleteSandbox {
			f = flagDeleteSandbox
		}
		e.byte(f)
		e.uvarint(uint64(len(b.Ops)))
		for _, op := range b.Ops {
			if op.Delete {
				e.byte(flagDeleteKey)
				e.bytes(op.Key)
				continue
			}
			e.byte(0)
			e.bytes(op.Key)
			e.bytes(op.Value)
		}
	}
	return e.b
}

// batches decodes the body of cmdBatches. Keys and values are copies.
func (d *decoder) batches() []*Batch {
	n := d.count()
	out := make([]*Batch, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		b := &Batch{Sandbox: d.string(), Epoch: d.uvarint()}
		b.DeleteSandbox = d.byte()&flagDeleteSandbox != 0
		nops := d.count()
		if nops > 0 {
			b.Ops = make([]Op, 0, nops)
		}
		for j := 0; j < nops && d.err == nil; j++ {
			del := d.byte()&flagDeleteKey != 0
			op := Op{Key: d.bytes(), Delete: del}
			if !del {
				op.Value = d.bytes()
			}
			b.Ops = append(b.Ops, op)
		}
		out = append(out, b)
	}
	return out
}

// validBatch reports what is wrong with b, or nil. A sandbox id is the key prefix
// of its records (sandbox NUL key), so it must be non-empty and hold no NUL.
func validBatch(b *Batch) error {
	if b.Sandbox == "" || bytes.IndexByte([]byte(b.Sandbox), 0) >= 0 {
		return fmt.Errorf("%w: bad sandbox id %q", ErrInvalid, b.Sandbox)
	}
	return nil
}

// verdict codes of one batch in an applied group.
const (
	batchApplied byte = 0
	batchFenced  byte = 1 // epoch is the current epoch the batch did not carry
	batchInvalid byte = 2
)

// batchVerdict is the FSM's decision on one batch. Every replica reaches the same.
type batchVerdict struct {
	code  byte
	epoch uint64 // the current epoch, for batchFenced
}

// groupResult is what the FSM returns for a cmdBatches entry.
type groupResult struct {
	verdicts []batchVerdict
}

// err turns a verdict into the error Write returns for b.
func (v batchVerdict) err(b *Batch) error {
	switch v.code {
	case batchApplied:
		return nil
	case batchFenced:
		return fmt.Errorf("%w: sandbox %q epoch %d, current %d", ErrFenced, b.Sandbox, b.Epoch, v.epoch)
	default:
		return validBatch(b)
	}
}

func (e *encoder) verdicts(vs []batchVerdict) {
	e.uvarint(uint64(len(vs)))
	for _, v := range vs {
		e.byte(v.code)
		e.uvarint(v.epoch)
	}
}

func (d *decoder) verdicts() []batchVerdict {
	n := d.count()
	out := make([]batchVerdict, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, batchVerdict{code: d.byte(), epoch: d.uvarint()})
	}
	return out
}
