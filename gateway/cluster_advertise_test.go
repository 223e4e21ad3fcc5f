package gateway

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/sandgate/sandgate/cluster"
)

// TestClusterAdvertise: two nodes bind every interface (HTTP and raft on 0.0.0.0),
// as nodes on a real network do, and tell the cluster another address: an explicit
// one (127.0.0.2, which only reaches them because they listen on all interfaces), or
// the host's first non-loopback address. The join, the member table, /v1/cluster and
// forwarding all use the advertised addresses: a sandbox owned by the joiner answers
// exec and files through the seed. Not parallel: two raft nodes at 0.1× timeouts need
// the CPU to keep their leases.
func TestClusterAdvertise(t *testing.T) {
	host, err := cluster.AdvertiseAddr("0.0.0.0:1", "")
	if err != nil {
		host = "" // the derived case is skipped below
	} else {
		host, _, _ = net.SplitHostPort(host)
	}
	tests := []struct {
		name      string
		advertise string // Advertise and RaftAdvertise; "" derives them
		wantHost  string
	}{
		{name: "explicit host", advertise: "127.0.0.2", wantHost: "127.0.0.2"},
		{name: "derived from the interfaces", wantHost: host},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantHost == "" {
				t.Skip("this host has no non-loopback unicast address")
			}
			var nodes []*testServer
			for i, id := range []string{"s", "j"} {
				nodes = append(nodes, newTestServer(t, &serverOptions{listen: "0.0.0.0:0", config: func(c *Config) {
					c.NodeID = id
					c.RaftListen = "0.0.0.0:0"
					c.Advertise, c.RaftAdvertise = tt.advertise, tt.advertise
					if i > 0 {
						c.Join = nodes[0].srv.cfg.Advertise // a seed as another machine would name it
					}
				}}))
			}
			seed, joiner := nodes[0], nodes[1]
			for _, n := range nodes {
				_, port, _ := net.SplitHostPort(n.addr())
				if want := net.JoinHostPort(tt.wantHost, port); n.srv.cfg.Advertise != want {
					t.Fatalf("%s advertises HTTP %s, want %s", n.srv.cfg.NodeID, n.srv.cfg.Advertise, want)
				}
				if h, _, _ := net.SplitHostPort(n.srv.cluster.RaftAddr()); h != tt.wantHost {
					t.Fatalf("%s advertises raft %s, want host %s", n.srv.cfg.NodeID, n.srv.cluster.RaftAddr(), tt.wantHost)
				}
			}

			// Every member as every node shows it: the advertised addresses.
			eventually(t, clusterPatience, "both members alive with advertised addresses in every view", func() bool {
				for _, n := range nodes {
					v, err := n.view()
					if err != nil || len(v.Members) != 2 {
						return false
					}
					for _, m := range v.Members {
						self := seed
						if m.ID == "j" {
							self = joiner
						}
						if m.Status != "alive" || m.HTTPAddr != self.srv.cfg.Advertise || m.RaftAddr != self.srv.cluster.RaftAddr() {
							return false
						}
					}
				}
				return true
			})

			// A sandbox the joiner owns, reached through the seed: forwarded to the
			// joiner's advertised HTTP address.
			var sb string
			eventually(t, clusterPatience, "the joiner to own partitions in both tables", func() bool {
				for i := 0; i < 4096 && sb == ""; i++ {
					id := fmt.Sprintf("adv-%d", i)
					o1, _, ok1 := seed.srv.cluster.Owner(id)
					o2, _, ok2 := joiner.srv.cluster.Owner(id)
					if ok1 && ok2 && o1 == "j" && o2 == "j" {
						sb = id
					}
				}
				return sb != ""
			})
			var info sandboxJSON
			seed.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb}).json(t, &info)
			if info.Node != "j" {
				t.Fatalf("created %s through the seed: node %q, want j", sb, info.Node)
			}
			var ex execJSON
			seed.must(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": "echo forwarded"}).json(t, &ex)
			if ex.Stdout != "forwarded\n" || ex.ExitCode != 0 {
				t.Fatalf("exec through the seed: %+v", ex)
			}
			path := "/v1/sandboxes/" + sb + "/files?path=f"
			seed.must(http.StatusNoContent, "PUT", path, []byte("through the seed"))
			if got := string(joiner.must(http.StatusOK, "GET", path, nil).body); got != "through the seed" {
				t.Fatalf("file on the owner: %q", got)
			}
			seed.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/"+sb, nil)
		})
	}
}
