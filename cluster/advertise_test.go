package cluster

import (
	"errors"
	"net"
	"testing"
)

// TestAdvertiseAddr: the advertise address defaults from the listen address, and
// from the interfaces when the listen host is unspecified; an unspecified advertise
// host, or none to derive, is ErrAdvertise.
func TestAdvertiseAddr(t *testing.T) {
	t.Parallel()
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	lo4, lo6 := cidr("127.0.0.1/8"), cidr("::1/128")
	link6, ula6 := cidr("fe80::1/64"), cidr("fd00::2/64")
	eth4, eth4b := cidr("192.0.2.2/24"), cidr("198.51.100.7/24")
	tests := []struct {
		name      string
		listen    string
		advertise string
		ifaddrs   []net.Addr
		want      string // "" means ErrAdvertise
	}{
		{name: "specific listen host", listen: "10.1.2.3:7070", ifaddrs: []net.Addr{eth4}, want: "10.1.2.3:7070"},
		{name: "loopback listen", listen: "127.0.0.1:7070", want: "127.0.0.1:7070"},
		{name: "host name listen", listen: "node1.example:7070", want: "node1.example:7070"},
		{name: "listen port 0 stays 0", listen: "127.0.0.1:0", want: "127.0.0.1:0"},
		{name: "all IPv4 interfaces", listen: "0.0.0.0:7070", ifaddrs: []net.Addr{lo4, lo6, link6, eth4, eth4b}, want: "192.0.2.2:7070"},
		{name: "all IPv6 interfaces", listen: "[::]:7070", ifaddrs: []net.Addr{lo4, eth4}, want: "192.0.2.2:7070"},
		{name: "no listen host", listen: ":7070", ifaddrs: []net.Addr{eth4b}, want: "198.51.100.7:7070"},
		{name: "IPv4 before IPv6", listen: "0.0.0.0:7070", ifaddrs: []net.Addr{ula6, eth4}, want: "192.0.2.2:7070"},
		{name: "IPv6 when no IPv4", listen: "0.0.0.0:7070", ifaddrs: []net.Addr{lo4, link6, ula6}, want: "[fd00::2]:7070"},
		{name: "only loopback and link-local", listen: "0.0.0.0:7070", ifaddrs: []net.Addr{lo4, lo6, link6}},
		{name: "no interfaces", listen: "[::]:7070"},
		{name: "explicit host:port", listen: "0.0.0.0:7070", advertise: "10.0.0.5:80", want: "10.0.0.5:80"},
		{name: "explicit host takes the listen port", listen: "0.0.0.0:7070", advertise: "10.0.0.5", want: "10.0.0.5:7070"},
		{name: "explicit port 0 takes the listen port", listen: "0.0.0.0:7070", advertise: "10.0.0.5:0", want: "10.0.0.5:7070"},
		{name: "explicit host name", listen: "[::]:7071", advertise: "node1.example", want: "node1.example:7071"},
		{name: "explicit IPv6 host", listen: "[::]:7071", advertise: "fd00::9", want: "[fd00::9]:7071"},
		{name: "explicit bracketed IPv6 host", listen: "[::]:7071", advertise: "[fd00::9]", want: "[fd00::9]:7071"},
		{name: "explicit overrides a specific listen host", listen: "127.0.0.1:7070", advertise: "127.0.0.2", want: "127.0.0.2:7070"},
		{name: "explicit unspecified IPv4", listen: "127.0.0.1:7070", advertise: "0.0.0.0:7070"},
		{name: "explicit unspecified IPv6", listen: "127.0.0.1:7070", advertise: "[::]"},
		{name: "explicit empty host", listen: "127.0.0.1:7070", advertise: ":7070"},
		{name: "explicit bad port", listen: "127.0.0.1:7070", advertise: "10.0.0.5:http"},
		{name: "bad listen address", listen: "7070", advertise: "10.0.0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ifaddrs := func() ([]net.Addr, error) { return tt.ifaddrs, nil }
			got, err := advertiseAddr(tt.listen, tt.advertise, ifaddrs)
			if tt.want == "" {
				if !errors.Is(err, ErrAdvertise) {
					t.Fatalf("advertiseAddr(%q, %q) = %q, %v; want ErrAdvertise", tt.listen, tt.advertise, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("advertiseAddr(%q, %q) = %q, %v; want %q", tt.listen, tt.advertise, got, err, tt.want)
			}
		})
	}
	t.Run("interfaces unreadable", func(t *testing.T) {
		t.Parallel()
		_, err := advertiseAddr("0.0.0.0:7070", "", func() ([]net.Addr, error) { return nil, errors.New("boom") })
		if !errors.Is(err, ErrAdvertise) {
			t.Fatalf("err %v, want ErrAdvertise", err)
		}
	})
}
