package cluster

import (
	"io"
	"testing"
	"time"
)

// TestStreamLayerCloseWaitsForRaftHandlers: a connection handed to raft is raft's
// handler's until it closes it, and the stream layer's Close returns only after that
// (it closes the connection under the handler, whose read then fails). Without the
// wait a node's Close could return while a handler still acted on an RPC it had read
// (a heartbeat writing the term after the stable store was closed).
func TestStreamLayerCloseWaitsForRaftHandlers(t *testing.T) {
	t.Parallel()
	node, err := listen("127.0.0.1:0", "", nil, newAuthenticator(testSecret, discard))
	if err != nil {
		t.Fatal(err)
	}
	node.serve(nil)
	peer, err := listen("127.0.0.1:0", "", nil, newAuthenticator(testSecret, discard))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	out, err := peer.dialStream(node.Addr().String(), 0, 10*time.Second) // rpcAppendEntries
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	// The "handler": raft's handleConn reads until the connection fails, then
	// closes it; here the close waits for the test's word.
	in, err := node.Accept()
	if err != nil {
		t.Fatal(err)
	}
	readFailed, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(readFailed)
		<-release
		in.Close()
	}()
	closed := make(chan error, 1)
	go func() { closed <- node.Close() }()

	select {
	case <-readFailed: // Close closed the connection under the handler
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's read did not fail after Close began")
	}
	select {
	case err := <-closed:
		close(release)
		t.Fatalf("Close returned (%v) while raft's handler still held its connection", err)
	case <-time.After(100 * time.Millisecond): // Close waits for ever here; it must not return
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return once the handler closed its connection")
	}
}
