package gateway

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"
)

// TestConnProgress: connProgress reports progress while the peer reads what fills the
// connection, and none once the peer stops reading and the buffers between are full.
func TestConnProgress(t *testing.T) {
	t.Parallel()
	conn, peer := tcpPair(t)
	progress := connProgress(conn)
	if progress == nil {
		t.Fatal("no progress probe for a TCP connection")
	}
	if progress() {
		t.Fatal("progress before anything was sent")
	}
	// The writer keeps the connection full; the peer reads nothing at first.
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunk := make([]byte, 64<<10)
		for {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	// While the buffers fill, the peer's stack acknowledges; once they are full it
	// stops: two looks in a row a while apart see nothing new.
	eventually(t, 30*time.Second, "the peer's buffers to fill", func() bool {
		progress()
		time.Sleep(50 * time.Millisecond)
		return !progress()
	})
	// The peer reads a little: that is progress.
	buf := make([]byte, 256<<10)
	eventually(t, 30*time.Second, "progress once the peer reads", func() bool {
		if _, err := io.ReadFull(peer, buf); err != nil {
			t.Fatal(err)
		}
		return progress()
	})
	_ = conn.Close()
	<-done
	if progress() {
		t.Fatal("progress on a closed connection")
	}
}

// TestLiveOptionsProgress: a live stream's subscription asks the client connection for
// progress when the connection is known (Serve records it), and holds without it
// otherwise.
func TestLiveOptionsProgress(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{StreamHoldBound: time.Second}}
	conn, _ := tcpPair(t)
	r := httptest.NewRequest("GET", "/", nil)
	if o := s.liveOptions(r); !o.Hold || o.HoldBound != time.Second || o.Progress != nil {
		t.Fatalf("options without a known connection: %+v", o)
	}
	r = r.WithContext(withConn(context.Background(), conn))
	if o := s.liveOptions(r); !o.Hold || o.Progress == nil {
		t.Fatalf("options with the client's connection: %+v", o)
	}
}
