package actor

import (
	"context"
	"os"
	"time"
)

func nowMono() time.Time            { return time.Now() }
func sinceMono(t time.Time) float64 { return time.Since(t).Seconds() }

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

// crashNode drops n as a crash would, as far as storage can tell: storage is closed
// first, so nothing the node does while it stops (ending processes, recording their
// exits, dropping run index entries) reaches the disk. The node is then closed to
// free its goroutines and processes; its cleanup's Close is a no-op.
func crashNode(tb interface{ Fatal(...any) }, n *Node) {
	if err := n.store.Close(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = n.Close(ctx) // writes fail with ErrClosed: that is the point
}
