package gateway

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestOpenCodeThroughNonOwner: the OpenCode routes of a sandbox owned by a, used
// through b and c: REST with the directory as a URI-encoded header, CORS granted once
// by the accepting node, a connect with only a ticket (made through c, used through b:
// the owner checks and uses it up), input and output, the ticket refused the second
// time, the stream closed with 1012 when the sandbox moves, and the pty removed.
func TestOpenCodeThroughNonOwner(t *testing.T) {
	tr := newTrio(t, nil)
	a, b, c := tr.node("a"), tr.node("b"), tr.node("c")
	sb := tr.ownedBy("oc", "a")
	mustSetUp(t, c, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	c.must(http.StatusNoContent, "POST", "/v1/sandboxes/"+sb+"/files/mkdir", map[string]any{"path": "proj dir/é", "parents": true})
	base := "/v1/sandboxes/" + sb + "/opencode/pty"

	dir := url.PathEscape(a.guestWorkspace(sb) + "/proj dir/é")
	body, _ := json.Marshal(map[string]any{"command": "sh", "args": []string{"-c", ptyScript}, "title": "t"})
	r := c.ocDo("POST", base, string(body),
		http.Header{"X-Opencode-Directory": {dir}, "Content-Type": {"application/json"}, "Origin": {c.url}})
	if r.status != http.StatusOK {
		t.Fatalf("create through c: %d %s", r.status, r.body)
	}
	if got := r.header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != c.url {
		t.Fatalf("CORS grant through c: %q", got)
	}
	var p ptyJSON
	r.json(t, &p)
	if p.Cwd != a.guestWorkspace(sb)+"/proj dir/é" {
		t.Fatalf("cwd %q", p.Cwd)
	}
	var list []ptyJSON
	b.must(http.StatusOK, "GET", base+"?directory="+url.QueryEscape("proj dir"), nil).json(t, &list)
	if len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("list through b: %+v", list)
	}
	if r := b.ocDo("GET", base+"?directory=..", nil, nil); r.status != http.StatusBadRequest {
		t.Fatalf("directory outside through b: %d", r.status)
	}

	var tk ticketJSON
	c.must(http.StatusOK, "POST", base+"/"+p.ID+"/connect-token", nil).json(t, &tk)
	path := base + "/" + p.ID + "/connect?ticket=" + tk.Ticket
	ws, st := dialPty(t, b.url, path, "", nil)
	if st != http.StatusSwitchingProtocols {
		t.Fatalf("connect with a ticket through b: %d", st)
	}
	ws.readUntil(t, func(w *ptyConn) bool { return w.replied && strings.Contains(w.text.String(), "😀") })
	ws.send(t, websocket.MessageText, "through b ✓\r")
	ws.readUntil(t, func(w *ptyConn) bool { return strings.Contains(w.text.String(), "in:through b ✓") })
	if n := a.srv.streams.count(sb); n != 1 {
		t.Fatalf("streams on the owner: %d", n)
	}
	if _, st := dialPty(t, c.url, path, "", nil); st != http.StatusUnauthorized {
		t.Fatalf("the ticket again, through c: %d", st)
	}

	// The sandbox moves: the stream ends with 1012, and the client reconnects.
	tr.pin(sb, "b")
	if st := ws.toClose(t); st != websocket.StatusServiceRestart {
		t.Fatalf("close on a move: %d, want 1012", st)
	}
	var gone []ptyJSON
	c.must(http.StatusOK, "GET", base, nil).json(t, &gone)
	if len(gone) != 1 || gone[0].Status != "exited" {
		t.Fatalf("after the move: %+v", gone)
	}
	if r := c.must(http.StatusOK, "DELETE", base+"/"+p.ID, nil); strings.TrimSpace(string(r.body)) != "true" {
		t.Fatalf("remove: %s", r.body)
	}
	c.must(http.StatusNotFound, "GET", base+"/"+p.ID, nil)
}
