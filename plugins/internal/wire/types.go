package wire

// Version is the ABI version described in plugins/ABI.md, the one this package's
// unversioned functions speak and the Go guest SDK exports from sandgate_abi_version.
// The host also accepts modules of every version down to MinVersion, and speaks to each
// in its own version (the ...V functions).
const Version = 2

// MinVersion is the oldest ABI version the host still accepts.
const MinVersion = 1

// Message tags: the first byte of each message.
const (
	TagBudgetRequest byte = 0x01
	TagRouteRequest  byte = 0x02
	TagBudget        byte = 0x81
	TagDecision      byte = 0x82
)

// Limits enforced by the decoders, so garbage cannot make either side allocate much.
const (
	MaxString  = 64 << 10 // bytes in one string
	MaxLabels  = 1024     // entries in one label map
	MaxCommand = 4096     // arguments in one command
	MaxMessage = 1 << 20  // bytes in one message
)

// Verdicts of a [Decision].
const (
	VerdictAllow byte = 0
	VerdictDeny  byte = 1
)

// Network values of a [Budget]: the API's "network", ordered from the narrowest.
// NetworkDefault (0) means "the operator's default" in an answer.
const (
	NetworkDefault  byte = 0
	NetworkNone     byte = 1
	NetworkLoopback byte = 2
	NetworkHost     byte = 3
)

// Budget is the resource budget of one sandbox; the JSON names of its fields are those of
// the API's budget object. In a plugin's answer a zero field means "the operator's
// default"; the host clamps every other field to [1, operator maximum]. The fields after
// OutputBufferBytes are encoded from ABI version 2 on: a version 1 module neither sees
// nor sets them.
type Budget struct {
	IdleTTLMS         int64 // idle_ttl_ms
	MaxDurationMS     int64 // max_duration_ms
	MaxProcesses      int64 // max_processes
	MaxExecTimeoutMS  int64 // max_exec_timeout_ms
	OutputBufferBytes int64 // output_buffer_bytes
	MemoryBytes       int64 // memory_bytes (version 2)
	Pids              int64 // pids (version 2)
	CPUMillis         int64 // cpu_millis, 1000 = one core (version 2)
	DiskBytes         int64 // disk_bytes (version 2)
	Network           byte  // network: NetworkNone, NetworkLoopback or NetworkHost (version 2)
}

// BudgetRequest asks a plugin for the budget of a sandbox being created, or of a live
// sandbox again after the plugin was reloaded.
type BudgetRequest struct {
	Tenant    string            // tenant of the caller's token
	SandboxID string            // id of the sandbox
	Labels    map[string]string // labels of the sandbox
	Reload    bool              // true when asked again after a reload
	Defaults  Budget            // the operator's defaults, for the plugin's information
	Max       Budget            // the operator's maxima, for the plugin's information
}

// RouteRequest asks a plugin whether one API request may be served.
type RouteRequest struct {
	Tenant    string            // tenant of the caller's token
	Method    string            // HTTP method, e.g. "POST"
	Route     string            // route pattern, e.g. "POST /v1/sandboxes/{sb}/exec"
	SandboxID string            // sandbox id, empty for routes without one
	Labels    map[string]string // labels of the sandbox (at create: the requested ones)
	Command   []string          // argv for exec, process and session exec; else empty
}

// Decision is a plugin's answer to a [RouteRequest].
type Decision struct {
	// Allow is true to serve the request.
	Allow bool
	// Status is the HTTP status of a denial: 403 (default, when 0) or 429.
	Status int
	// Reason is the human-readable reason of a denial.
	Reason string
	// Pool is, at sandbox create, the label selector a node must match to own the
	// sandbox; empty means any node.
	Pool map[string]string
}
