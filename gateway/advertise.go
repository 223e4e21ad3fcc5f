package gateway

import (
	"fmt"

	"github.com/sandgate/sandgate/cluster"
)

// ErrAdvertise is returned by New when the node has no address to tell the other
// nodes: Advertise or RaftAdvertise names 0.0.0.0 or ::, or a listen address is on
// all interfaces and the host has no non-loopback unicast address. It is
// cluster.ErrAdvertise, so either compares with errors.Is.
var ErrAdvertise = cluster.ErrAdvertise

// advertise fills c.Advertise from c.Listen (cluster.AdvertiseAddr) and checks that
// c.RaftAdvertise can be chosen. The raft one is chosen again by the cluster node
// once its listener is bound, when a RaftListen port of 0 is known.
func (c *Config) advertise() error {
	adv, err := cluster.AdvertiseAddr(c.Listen, c.Advertise)
	if err != nil {
		return fmt.Errorf("gateway: failed to choose the HTTP advertise address: %w", err)
	}
	if _, err := cluster.AdvertiseAddr(c.RaftListen, c.RaftAdvertise); err != nil {
		return fmt.Errorf("gateway: failed to choose the raft advertise address: %w", err)
	}
	c.Advertise = adv
	return nil
}

// logAdvertise says at start which addresses the node advertises when they are not
// the ones it listens on, so an operator sees what a derived default chose.
func logAdvertise(c *Config, n *cluster.Node) {
	if c.Advertise == c.Listen && n.RaftAddr() == c.RaftListen {
		return
	}
	c.Logger.Info("advertising this node to the cluster",
		"http", c.Advertise, "listen", c.Listen, "raft", n.RaftAddr(), "raft_listen", c.RaftListen)
}
