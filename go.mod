module github.com/sandgate/sandgate

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)
