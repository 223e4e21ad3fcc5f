package gateway

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Once any route shows a process exited (GET with wait_ms, the list, the SSE and
// WebSocket exit frames), GET /events already has its process.exited: every read is
// behind the commit that records the exit. Each case runs many short processes, since
// the window it closes is a few µs wide.
func TestExitShownOnlyAfterItsEvent(t *testing.T) {
	t.Parallel()
	const runs = 15
	cases := []struct {
		name string
		// waitExit returns once the route shows process id of sandbox sb exited.
		waitExit func(t *testing.T, ts *testServer, sb, id string)
	}{
		{"GET wait_ms", func(t *testing.T, ts *testServer, sb, id string) {
			var p processJSON
			ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/processes/"+id+"?wait_ms=20000", nil).json(t, &p)
			if p.Status != "exited" {
				t.Fatalf("after wait_ms: %+v", p)
			}
		}},
		{"list", func(t *testing.T, ts *testServer, sb, id string) {
			deadline := time.Now().Add(20 * time.Second)
			for {
				var list struct{ Processes []processJSON }
				ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/processes?status=exited", nil).json(t, &list)
				for _, p := range list.Processes {
					if p.ID == id {
						return
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s never listed as exited", id)
				}
			}
		}},
		{"SSE exit", func(t *testing.T, ts *testServer, sb, id string) {
			ts.readSSE("/v1/sandboxes/"+sb+"/processes/"+id+"/output?offset=0", "", 20*time.Second, lastIs("exit"))
		}},
		{"WebSocket exit", func(t *testing.T, ts *testServer, sb, id string) {
			c := ts.dialWS("/v1/sandboxes/" + sb + "/processes/" + id + "/ws?offset=0")
			c.readUntil(t, 20*time.Second, func(c *wsClient) bool { return c.control("exit") != nil })
			c.conn.CloseNow()
		}},
	}
	ts := newTestServer(t, nil)
	for i, tc := range cases {
		sb := fmt.Sprintf("eg%d", i)
		ts.sandbox(sb)
		t.Run(tc.name, func(t *testing.T) {
			for run := range runs {
				var p processJSON
				ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes",
					map[string]any{"command": fmt.Sprintf("echo %d; exit %d", run, run%3)}).json(t, &p)
				tc.waitExit(t, ts, sb, p.ID)
				if !hasEvent(t, ts, sb, "process.exited", p.ID) {
					t.Fatalf("run %d: %s shows %s exited before GET /events has process.exited", run, tc.name, p.ID)
				}
			}
		})
	}
}

// hasEvent reports whether sandbox sb's event log has an event of typ for id.
func hasEvent(t testing.TB, ts *testServer, sb, typ, id string) bool {
	t.Helper()
	var out struct {
		Events []struct {
			Type string
			Data struct{ ID string }
		}
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/events?since=0", nil).json(t, &out)
	for _, e := range out.Events {
		if e.Type == typ && e.Data.ID == id {
			return true
		}
	}
	return false
}
