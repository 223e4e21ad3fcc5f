package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestNoBytesLostAtExit attaches to PTY processes that print and exit at once, 100
// times: every byte must arrive before the exit message.
func TestNoBytesLostAtExit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("100 processes")
	}
	ts := newTestServer(t, nil)
	ts.sandbox("nl")
	const size = 256 << 10
	for i := 0; i < 100; i++ {
		var p processJSON
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/nl/processes", map[string]any{
			"command": "head -c 262144 /dev/zero | tr '\\0' x", "pty": map[string]int{"cols": 80, "rows": 24},
		}).json(t, &p)
		c := ts.dialWS("/v1/sandboxes/nl/processes/" + p.ID + "/ws?offset=0")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		n, exited := 0, false
		for !exited {
			typ, data, err := c.conn.Read(ctx)
			if err != nil {
				cancel()
				t.Fatalf("run %d: %v after %d bytes", i, err, n)
			}
			if typ == websocket.MessageBinary {
				n += len(data)
			} else {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatalf("bad control frame %q", data)
				}
				exited = m["type"] == "exit"
			}
		}
		cancel()
		c.conn.CloseNow()
		if n != size {
			t.Fatalf("run %d: %d bytes before exit, want %d", i, n, size)
		}
		ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/nl/processes/"+p.ID, nil)
	}
}
