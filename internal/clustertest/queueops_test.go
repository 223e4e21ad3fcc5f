package clustertest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/linearize"
)

// post queues a message whose data carries a fresh token; true when the post was
// acknowledged.
func (cl *client) post(n *clustertest.Node) bool {
	tok := cl.token("m")
	op := cl.rec.Call(cl.queueKey(), linearize.Post{Data: tok})
	resp, o := cl.do(n, "POST", "/v1/sandboxes/"+cl.sb+"/messages", map[string]any{"data": map[string]string{"k": tok}}, http.StatusCreated)
	var out struct{ ID string }
	if o == done && (json.Unmarshal(resp.Body, &out) != nil || out.ID == "") {
		o = unknown
	}
	cl.finish(op, o, linearize.Posted{ID: out.ID})
	return o == done
}

// take takes up to max messages, hidden for vis, long-polling up to wait; it returns
// the ids taken (nil on failure).
func (cl *client) take(n *clustertest.Node, max int, vis, wait time.Duration) []string {
	op := cl.rec.Call(cl.queueKey(), linearize.Take{Max: max, Visibility: vis})
	path := fmt.Sprintf("/v1/sandboxes/%s/messages?max=%d&visibility_ms=%d&wait_ms=%d", cl.sb, max, vis.Milliseconds(), wait.Milliseconds())
	resp, o := cl.do(n, "GET", path, nil, http.StatusOK)
	var out struct {
		Messages []struct {
			ID       string          `json:"id"`
			Data     json.RawMessage `json:"data"`
			Attempts int             `json:"attempts"`
		}
	}
	if o == done && json.Unmarshal(resp.Body, &out) != nil {
		o = unknown
	}
	msgs := make([]linearize.Msg, 0, len(out.Messages))
	ids := make([]string, 0, len(out.Messages))
	for _, m := range out.Messages {
		var d struct{ K string }
		_ = json.Unmarshal(m.Data, &d)
		msgs = append(msgs, linearize.Msg{ID: m.ID, Data: d.K, Attempts: m.Attempts})
		ids = append(ids, m.ID)
	}
	cl.finish(op, o, linearize.Taken{Messages: msgs})
	if o != done {
		return nil
	}
	return ids
}

// ack acknowledges ids: one id with DELETE, several with the batch route.
func (cl *client) ack(n *clustertest.Node, ids []string) {
	op := cl.rec.Call(cl.queueKey(), linearize.Ack{IDs: ids})
	if len(ids) == 1 {
		resp, o := cl.do(n, "DELETE", "/v1/sandboxes/"+cl.sb+"/messages/"+ids[0], nil, http.StatusNoContent, http.StatusNotFound)
		acked := 1
		if resp != nil && resp.Status == http.StatusNotFound {
			acked = 0
			if !strings.Contains(string(resp.Body), "message") {
				cl.fail("ack %s: the sandbox is not found: %s", ids[0], resp.Body)
				o = unknown
			}
		}
		cl.finish(op, o, linearize.Acked{N: acked})
		return
	}
	resp, o := cl.do(n, "POST", "/v1/sandboxes/"+cl.sb+"/messages/ack", map[string]any{"ids": ids}, http.StatusOK)
	var out struct{ Acked int }
	if o == done && json.Unmarshal(resp.Body, &out) != nil {
		o = unknown
	}
	cl.finish(op, o, linearize.Acked{N: out.Acked})
}
