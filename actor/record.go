package actor

import (
	"encoding/binary"
	"encoding/json"
	"time"
)

// Keys of a sandbox's records in Storage.
var (
	keyMeta     = []byte("m")  // sandboxRec (JSON)
	keyAlarm    = []byte("a")  // alarm time, big-endian unix nanoseconds
	keyCounters = []byte("c")  // last event seq, last message seq, queued messages (3 × big-endian uint64; older: the first 2; the third is written, not read)
	pfxEvent    = []byte("e")  // e<seq> → eventRec
	pfxMessage  = []byte("q")  // q<seq> → delivery header + messageRec (msgrec.go)
	pfxSession  = []byte("s/") // s/<id> → sessionRec
	pfxTerminal = []byte("t/") // t/<id> → terminalRec
	pfxExited   = []byte("p/") // p/<id> → exitedRec, until its keep time passes
)

func seqKey(pfx []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), pfx...), seq)
}

func keySeq(k []byte) uint64 {
	if len(k) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}

func idKey(pfx []byte, id string) []byte { return append(append([]byte(nil), pfx...), id...) }

// Sandbox states.
const (
	StateRunning    = "running"
	StateHibernated = "hibernated"
	StateExpired    = "expired"
	StateFailed     = "failed"
)

// sandboxRec is the durable sandbox record.
type sandboxRec struct {
	ID           string            `json:"id"`
	Labels       map[string]string `json:"labels,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Cwd          string            `json:"cwd,omitempty"`
	Tenant       string            `json:"tenant,omitempty"`
	Pool         map[string]string `json:"pool,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	LastActiveAt time.Time         `json:"last_active_at"`
	State        string            `json:"state"`
	FailReason   string            `json:"fail_reason,omitempty"`
	Budget       budgetRec         `json:"budget"`
	Sessions     int               `json:"sessions,omitempty"`  // remembered sessions, for listing passivated sandboxes
	Terminals    int               `json:"terminals,omitempty"` // remembered terminals
	// Node is the node that last activated the sandbox, Left that it ended that
	// activation cleanly for a move (Node.Deactivate), Ended that processes were
	// running then (it ended them), and Files that work which can write files ran
	// since the workspace was last known empty (moved.go). Records made before them
	// lack them: such a sandbox is not reported as moved.
	Node  string `json:"node,omitempty"`
	Left  bool   `json:"left,omitempty"`
	Ended bool   `json:"ended,omitempty"`
	Files bool   `json:"files,omitempty"`
}

type budgetRec struct {
	IdleTTL           int64 `json:"idle_ttl_ms"`
	MaxDuration       int64 `json:"max_duration_ms"`
	MaxProcesses      int   `json:"max_processes"`
	MaxExecTimeout    int64 `json:"max_exec_timeout_ms"`
	OutputBufferBytes int   `json:"output_buffer_bytes"`
	// Fields added with isolation; a record made before them has zeros, which take the
	// operator's defaults (Node.recBudget).
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	Pids        int    `json:"pids,omitempty"`
	CPUMillis   int    `json:"cpu_millis,omitempty"`
	DiskBytes   int64  `json:"disk_bytes,omitempty"`
	Network     string `json:"network,omitempty"`
}

func toBudgetRec(b Budget) budgetRec {
	return budgetRec{
		IdleTTL: b.IdleTTL.Milliseconds(), MaxDuration: b.MaxDuration.Milliseconds(),
		MaxProcesses: b.MaxProcesses, MaxExecTimeout: b.MaxExecTimeout.Milliseconds(),
		OutputBufferBytes: b.OutputBufferBytes, MemoryBytes: b.MemoryBytes, Pids: b.Pids,
		CPUMillis: b.CPUMillis, DiskBytes: b.DiskBytes, Network: string(b.Network),
	}
}

func (b budgetRec) budget() Budget {
	return Budget{
		IdleTTL: time.Duration(b.IdleTTL) * time.Millisecond, MaxDuration: time.Duration(b.MaxDuration) * time.Millisecond,
		MaxProcesses: b.MaxProcesses, MaxExecTimeout: time.Duration(b.MaxExecTimeout) * time.Millisecond,
		OutputBufferBytes: b.OutputBufferBytes, MemoryBytes: b.MemoryBytes, Pids: b.Pids,
		CPUMillis: b.CPUMillis, DiskBytes: b.DiskBytes, Network: Network(b.Network),
	}
}

// recBudget is the budget a record holds, with the fields a record made before they
// existed filled from the operator's defaults.
func (n *Node) recBudget(b budgetRec) Budget { return b.budget().fill(n.cfg.Defaults) }

type eventRec struct {
	Type string          `json:"t"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"d,omitempty"`
}

type messageRec struct {
	ID   string          `json:"id"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"d,omitempty"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("actor: cannot encode record: " + err.Error()) // our own record types always encode
	}
	return b
}
