package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestAttachHammer writes, resizes and reads offsets from many goroutines while the
// reader runs and the connection drops once. No message may arrive twice (messages in
// flight when the connection dropped may be lost: WebSocket has no acknowledgments),
// the stream must end cleanly, and Offset must count the bytes read.
func TestAttachHammer(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 8, 50
	var mu sync.Mutex
	got := map[string]int{}
	conns := 0
	const end = "END"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns++
		n := conns
		mu.Unlock()
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ready","offset":`+r.URL.Query().Get("offset")+`}`))
		for i := 0; ; i++ {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if string(b) != end {
				mu.Lock()
				got[string(b)]++
				mu.Unlock()
			}
			conn.Write(ctx, websocket.MessageBinary, []byte("."))
			if n == 1 && i == 40 {
				return // drop the first connection mid-stream
			}
			if string(b) == end {
				conn.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","exit_code":0}`))
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
		}
	})
	c := newTestClient(t, h, 5)
	a, err := c.Attach(t.Context(), "sb1", AttachProcess, "proc_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	failed := make(chan string, writers*perWriter+writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				msg := fmt.Sprintf("w%d-%d", w, i)
				if err := a.Write(ctx, []byte(msg)); err != nil {
					failed <- msg
				}
				_ = a.Offset()
			}
			if err := a.Resize(ctx, PTYSize{Cols: w + 1, Rows: 1}); err != nil {
				failed <- fmt.Sprintf(`{"type":"resize","cols":%d,"rows":1}`, w+1)
			}
		})
	}
	streamDone := make(chan struct{})
	var enders sync.WaitGroup
	enders.Go(func() {
		// END may be lost in flight like any message, so repeat it until the stream ends.
		wg.Wait()
		for {
			_ = a.Write(ctx, []byte(end))
			select {
			case <-streamDone:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	var out strings.Builder
	var last error
	for {
		ev, err := a.Next(ctx)
		if err != nil {
			last = err
			break
		}
		out.Write(ev.Data)
	}
	close(streamDone)
	enders.Wait()
	wg.Wait()
	close(failed)
	if !errors.Is(last, io.EOF) {
		t.Fatalf("stream ended with %v, want EOF", last)
	}
	mu.Lock()
	defer mu.Unlock()
	for msg, n := range got {
		if n != 1 {
			t.Errorf("message %q arrived %d times", msg, n)
		}
	}
	for msg := range failed {
		if got[msg] > 0 {
			t.Errorf("message %q reported failed but arrived", msg)
		}
	}
	if conns != 2 {
		t.Errorf("%d connections, want 2", conns)
	}
	if int64(out.Len()) != a.Offset() {
		t.Errorf("read %d output bytes, Offset() = %d", out.Len(), a.Offset())
	}
}
