package gateway

// OpenCode's PTY API (the pty routes of @opencode-ai/sdk's v2 client) is served under
// /v1/sandboxes/{sb}/opencode, so that a client whose base URL is that prefix drives
// the sandbox's terminals. It is a mapping onto the process routes, not a second
// process manager (docs/opencode.md has the table):
//
//   - a pty is a process with a PTY: its id is the process id, its title the process
//     label; every PTY process of the sandbox is listed, terminals included, running
//     and exited ones while their records are kept;
//   - create is the process create's actor turn (budgets, events, metrics, tenancy),
//     with OpenCode's defaults where its body says nothing (opencodeCreate);
//   - the routing policy is asked about each route as the process route it maps onto
//     (route.policyAs), so a policy written for those governs these too;
//   - errors of the handlers carry OpenCode's shape and sandgate's in one body
//     (opencode_render.go); the wrapper's own (token, ids, tenancy) stay sandgate's;
//   - the connect WebSocket authenticates by token or by a single-use ticket kept by
//     the sandbox's owner (opencode_ticket.go), and speaks OpenCode's framing with a
//     cursor in UTF-16 code units (opencode_ws.go);
//   - the subtree answers CORS for the pages the WebSocket Origin rule allows
//     (opencode_cors.go).

const (
	ocPath    = sbPath + "/opencode/pty"
	ocPtyPath = ocPath + "/{ptyID}"
)

// openCodeRoutes are the OpenCode routes.
func (s *Server) openCodeRoutes() []route {
	return []route{
		{pattern: "GET " + ocPath + "/shells", handle: s.opencodeShells, policyInHandler: true},
		{pattern: "GET " + ocPath, handle: s.opencodeList, policyAs: "GET " + sbPath + "/processes"},
		{pattern: "POST " + ocPath, handle: s.opencodeCreate, policyInHandler: true},
		{pattern: "GET " + ocPtyPath, handle: s.opencodeGet, policyAs: "GET " + procPath},
		{pattern: "PUT " + ocPtyPath, handle: s.opencodeUpdate, policyAs: "POST " + procPath + "/resize"},
		{pattern: "DELETE " + ocPtyPath, handle: s.opencodeRemove, policyAs: "DELETE " + procPath},
		{pattern: "POST " + ocPtyPath + "/connect-token", handle: s.opencodeConnectToken, policyAs: "GET " + procPath + "/ws"},
		{pattern: "GET " + ocPtyPath + "/connect", handle: s.opencodeConnect, queryToken: true, ticket: true,
			stream: streamWebSocket, policyAs: "GET " + procPath + "/ws"},
	}
}
