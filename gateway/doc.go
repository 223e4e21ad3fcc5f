// Package gateway serves the HTTP API (REST, SSE, WebSocket), auth and metrics, and wires
// the policy, actor and runtime packages together.
package gateway
