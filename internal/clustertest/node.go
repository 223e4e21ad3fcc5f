package clustertest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// listening starts the line serve logs once it answers requests.
const listening = "listening on http://"

// Node is one `sandgate serve` process of a Cluster, and what it keeps across
// restarts: id, addresses, data directory and log file. Its methods are safe for
// concurrent use, but Kill, Stop and Restart of one node are meant to be called by
// one goroutine at a time.
type Node struct {
	// ID is the node's --node-id: n1, n2, ...
	ID string
	// HTTPAddr is its --listen address (host:port), RaftAddr its --raft-listen.
	HTTPAddr, RaftAddr string
	// DataDir is its --data directory.
	DataDir string
	// LogPath is the file its stdout and stderr go to, over every run.
	LogPath string

	c    *Cluster
	args []string // serve's arguments

	mu   sync.Mutex
	proc *proc // the running process; nil when stopped
}

// proc is one run of a node.
type proc struct {
	cmd     *exec.Cmd
	log     *os.File
	ready   chan string   // the address of the listening line
	exited  chan struct{} // closed once cmd.Wait returned
	drained chan struct{} // closed once the stdout reader ended
}

// URL returns the node's base URL, http://HTTPAddr.
func (n *Node) URL() string { return "http://" + n.HTTPAddr }

// PID returns the pid of the node's process, or 0 when it is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// Running reports whether the node's process was started and has not exited.
func (n *Node) Running() bool {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Log returns everything the node has logged so far, over all its runs.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.LogPath)
	return string(b)
}

// start starts the node's process and waits until it listens, up to the cluster's
// StartTimeout. An error wraps ErrExited, or says it timed out.
func (n *Node) start() (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("failed to start node %s: %w", n.ID, err)
		}
	}()
	log, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== clustertest: %s %s\n", n.c.cfg.Binary, strings.Join(n.args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		log.Close()
		return err
	}
	cmd := exec.Command(n.c.cfg.Binary, n.args...)
	cmd.Env = append(os.Environ(), "SANDGATE_TOKEN=")
	cmd.Stdout, cmd.Stderr = pw, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		log.Close()
		return err
	}
	p := &proc{cmd: cmd, log: log, ready: make(chan string, 1), exited: make(chan struct{}), drained: make(chan struct{})}
	go p.readStdout(pr)
	go func() { _ = cmd.Wait(); close(p.exited) }()
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()

	timer := time.NewTimer(n.c.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case addr := <-p.ready:
		if addr != n.HTTPAddr {
			return fmt.Errorf("serve listens on %s, not on %s", addr, n.HTTPAddr)
		}
		return nil
	case <-p.exited:
		<-p.drained // the log is complete
		return fmt.Errorf("%w (%v)", ErrExited, cmd.ProcessState)
	case <-timer.C:
		return fmt.Errorf("serve did not log %q within %v", listening, n.c.cfg.StartTimeout)
	}
}

// readStdout copies serve's stdout to its log and reports the listening line.
func (p *proc) readStdout(pr *os.File) {
	defer close(p.drained)
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		_, _ = p.log.WriteString(line + "\n")
		if addr, ok := strings.CutPrefix(line, listening); ok {
			select {
			case p.ready <- addr:
			default:
			}
		}
	}
}

// Kill kills the node with SIGKILL, as kill -9 would, and every process it started,
// and waits until they are gone. It returns at once when the node is not running.
func (n *Node) Kill(tb testing.TB) {
	tb.Helper()
	if err := n.stop(false); err != nil {
		tb.Error(err)
	}
}

// Stop asks the node to shut down with SIGTERM and waits up to the cluster's
// StopTimeout, then kills what is left as Kill does. It returns the exit code of
// serve (-1 when a signal ended it), or -1 when it was not running.
func (n *Node) Stop(tb testing.TB) int {
	tb.Helper()
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if err := n.stop(true); err != nil {
		tb.Error(err)
	}
	if p == nil || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Restart stops the node if it runs (SIGTERM), then starts it again with the same id,
// addresses and data directory, and waits until it listens; failing to fails tb.
func (n *Node) Restart(tb testing.TB) {
	tb.Helper()
	n.Stop(tb)
	if err := n.start(); err != nil {
		tb.Fatalf("%v\n%s", err, tail(n.Log(), tailLines))
	}
}

// stop ends the node's process: with term, SIGTERM and up to StopTimeout to exit;
// then SIGKILL to its process group and to every descendant it had.
func (n *Node) stop(term bool) error {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	var errs []error
	var trees []*procTree
	defer func() {
		for _, t := range trees {
			t.close()
		}
	}()
	if term {
		// Its descendants, listed while it still has them: after a clean exit they
		// would belong to someone else and could not be found.
		trees = append(trees, descendants(pid))
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(n.c.cfg.StopTimeout):
			errs = append(errs, fmt.Errorf("node %s did not exit within %v of SIGTERM", n.ID, n.c.cfg.StopTimeout))
		}
	}
	select {
	case <-p.exited:
	default:
		// Freeze serve so that it starts nothing while its descendants are listed.
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		trees = append(trees, descendants(pid))
		killGroup(pid) // Setpgid: the group's id is serve's pid
		_ = p.cmd.Process.Kill()
	}
	for _, t := range trees {
		t.kill()
	}
	select {
	case <-p.exited:
	case <-time.After(reapTimeout):
		errs = append(errs, fmt.Errorf("node %s (pid %d) did not exit within %v of SIGKILL", n.ID, pid, reapTimeout))
	}
	for _, t := range trees {
		if left := t.wait(reapTimeout); len(left) > 0 {
			errs = append(errs, fmt.Errorf("processes of node %s still alive %v after SIGKILL: %v", n.ID, reapTimeout, left))
		}
	}
	select {
	case <-p.drained:
	case <-time.After(reapTimeout):
		errs = append(errs, fmt.Errorf("node %s: its stdout stayed open %v after it died", n.ID, reapTimeout))
	}
	p.log.Close()
	return errors.Join(errs...)
}

// reapTimeout bounds each wait for killed processes to go.
const reapTimeout = 30 * time.Second

// tailLines is how much of each node's log a failed test shows.
const tailLines = 60

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
