package cluster

// A command is one type byte followed by its body (codec.go). Types with the ignorable
// bit set may be skipped by a version that does not know them: a newer leader can log
// them during a rolling upgrade without stopping older replicas. Any other unknown type
// stops the replica (see fsm.apply).
type cmdType byte

const (
	cmdRegister  cmdType = 1 // member: add or replace, status alive
	cmdSetStatus cmdType = 2 // id, status
	cmdAssign    cmdType = 3 // moves: CAS each partition's epoch, all or nothing
	cmdPin       cmdType = 4 // sandbox, selector, owner, expected epoch
	cmdUnpin     cmdType = 5 // sandbox, expected epoch
	cmdFail      cmdType = 6 // id, moves: mark the member down and move its partitions
	// cmdBatches carries a group of sandbox batches: every Write that queued on one
	// node while its previous group committed (group commit, see store_commit.go). It
	// is not ignorable: a replica that skipped it would silently lose sandbox records.
	cmdBatches   cmdType = 7
	cmdSetValues cmdType = 8 // key/value pairs; an empty value deletes its key (value.go)

	cmdBeginHandoff    cmdType = 9  // handoffs: CAS each active partition, state → handoff to Next
	cmdCompleteHandoff cmdType = 10 // moves: CAS each partition in handoff, owner → the move's
	cmdAbortHandoff    cmdType = 11 // partitions, epochs: CAS each partition in handoff, back to active
	// cmdPinMove moves or drops pins: an operation byte, then pins with their
	// expected epochs (pinmove.go).
	cmdPinMove cmdType = 12
	// cmdBatchesDrop is cmdBatches, with the same body, holding at least one batch
	// that deletes its sandbox outright (DeleteSandbox, no ops): applied, such a batch
	// also drops its sandbox's pin (pindelete.go). Its own type makes a replica that
	// does not know the rule stop rather than keep the pin and diverge.
	cmdBatchesDrop cmdType = 13

	cmdIgnorable cmdType = 0x80
)

// move reassigns one partition, provided its epoch is still Expect.
type move struct {
	P      int
	Owner  NodeID
	Expect uint64
}

func encodeRegister(m Member) []byte {
	e := encoder{b: []byte{byte(cmdRegister)}}
	m.Status = StatusAlive
	e.member(m)
	return e.b
}

func encodeSetStatus(id NodeID, s Status) []byte {
	e := encoder{b: []byte{byte(cmdSetStatus)}}
	e.string(string(id))
	e.byte(byte(s))
	return e.b
}

func encodeAssign(moves []move) []byte {
	e := encoder{b: make([]byte, 0, 1+len(moves)*24)}
	e.byte(byte(cmdAssign))
	e.moves(moves)
	return e.b
}

func encodeFail(id NodeID, moves []move) []byte {
	e := encoder{b: make([]byte, 0, 16+len(moves)*24)}
	e.byte(byte(cmdFail))
	e.string(string(id))
	e.moves(moves)
	return e.b
}

func encodePin(sandbox string, sel map[string]string, owner NodeID, expect uint64) []byte {
	e := encoder{b: []byte{byte(cmdPin)}}
	e.string(sandbox)
	e.labels(sel)
	e.string(string(owner))
	e.uvarint(expect)
	return e.b
}

func encodeUnpin(sandbox string, expect uint64) []byte {
	e := encoder{b: []byte{byte(cmdUnpin)}}
	e.string(sandbox)
	e.uvarint(expect)
	return e.b
}
