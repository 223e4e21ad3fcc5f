package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// Advertised addresses. A node binds one address (its listen address) and tells the
// cluster another (its advertise address): the host:port other nodes dial. They differ
// when a node listens on all interfaces (0.0.0.0 or ::), as a node on a real network
// does; an unspecified host cannot be dialled by a peer, which would dial itself.
//
// The defaulting, shared by the raft transport and the gateway's HTTP address:
//
//  1. an explicit advertise address is used as given; without a port (or with port
//     0) it takes the listen port; its host must not be unspecified;
//  2. otherwise a listen address with a specified host is its own advertise address;
//  3. otherwise (0.0.0.0, ::, or no host) the host's first non-loopback unicast IPv4
//     address, else its first global unicast IPv6 one, with the listen port.
//
// Link-local IPv6 addresses are skipped in 3: they need a zone, which is only
// meaningful on the host that names it.

// AdvertiseAddr returns the host:port a node listening on listen tells the cluster,
// given the operator's advertise (empty: derive it, host or host:port: use it) by the
// steps above. A listen port of 0 stays 0 unless advertise names a port: the caller
// resolves it once bound. The error wraps ErrAdvertise.
func AdvertiseAddr(listen, advertise string) (string, error) {
	return advertiseAddr(listen, advertise, net.InterfaceAddrs)
}

func advertiseAddr(listen, advertise string, ifaddrs func() ([]net.Addr, error)) (string, error) {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%w: listen address %q: %v", ErrAdvertise, listen, err)
	}
	if advertise != "" {
		host, port, err := net.SplitHostPort(advertise)
		if err != nil {
			// A bare host (or IPv6 literal, bracketed or not) takes the listen port.
			host, port = trimBrackets(advertise), lport
		}
		if port == "" || port == "0" {
			port = lport
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", fmt.Errorf("%w: advertise address %q has an invalid port", ErrAdvertise, advertise)
		}
		if unspecified(host) {
			return "", fmt.Errorf("%w: advertise address %q names no host other nodes can dial", ErrAdvertise, advertise)
		}
		return net.JoinHostPort(host, port), nil
	}
	if !unspecified(lhost) {
		return listen, nil
	}
	ip, err := firstUnicast(ifaddrs)
	if err != nil {
		return "", fmt.Errorf("%w: listening on %s, and %v: set the advertise address", ErrAdvertise, listen, err)
	}
	return net.JoinHostPort(ip.String(), lport), nil
}

// unspecified reports whether host names no single interface: empty, 0.0.0.0 or ::.
func unspecified(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// firstUnicast returns the first non-loopback unicast IPv4 address of ifaddrs, else
// the first global unicast IPv6 one.
func firstUnicast(ifaddrs func() ([]net.Addr, error)) (net.IP, error) {
	addrs, err := ifaddrs()
	if err != nil {
		return nil, fmt.Errorf("failed to list interface addresses: %w", err)
	}
	var v6 net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP
		if ip.IsLoopback() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLinkLocalUnicast() {
			continue
		}
		if v4 := ip.To4(); v4 != nil {
			return v4, nil
		}
		if v6 == nil && ip.IsGlobalUnicast() {
			v6 = ip
		}
	}
	if v6 != nil {
		return v6, nil
	}
	return nil, fmt.Errorf("no non-loopback unicast address found")
}

// advertisedAddr is the raft transport's advertised address (raft reads it through
// StreamLayer.Addr, so it may be a host name).
type advertisedAddr string

// Network is "tcp".
func (a advertisedAddr) Network() string { return "tcp" }

// String is the advertised host:port.
func (a advertisedAddr) String() string { return string(a) }
