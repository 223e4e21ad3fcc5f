module github.com/sandgate/sandgate

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/coder/websocket v1.8.15
	github.com/creack/pty v1.1.24
	github.com/hashicorp/go-hclog v1.6.3
	github.com/hashicorp/raft v1.8.0
	github.com/prometheus/client_golang v1.25.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/term v0.47.0
	google.golang.org/protobuf v1.36.12 // indirect
)
