// Package runtime starts, watches and kills the process trees of a sandbox: one-shot
// exec, long-lived processes with or without a PTY, output rings, persistent shell
// sessions, terminals and confined workspace file access. It imports nothing of ours.
package runtime
