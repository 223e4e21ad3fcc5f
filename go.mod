module github.com/sandgate/sandgate

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.49.0
)
