package wire

// Version is the ABI version described in plugins/ABI.md. A guest exports it from
// sandgate_abi_version; the host refuses a module that answers anything else.
const Version = 1

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

// Budget is the resource budget of one sandbox; the JSON names of its fields are those of
// the API's budget object. In a plugin's answer a zero field means "the operator's
// default"; the host clamps every other field to [1, operator maximum].
type Budget struct {
	IdleTTLMS         int64 // idle_ttl_ms
	MaxDurationMS     int64 // max_duration_ms
	MaxProcesses      int64 // max_processes
	MaxExecTimeoutMS  int64 // max_exec_timeout_ms
	OutputBufferBytes int64 // output_buffer_bytes
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
