// Package cluster owns the raft node, membership and sandbox ownership. It imports
// nothing of ours.
package cluster
