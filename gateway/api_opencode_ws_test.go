package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/actor"
)

// ptyConn is a test client of the connect WebSocket, reading as OpenCode's does:
// text frames are output, binary frames starting with 0x00 are control frames.
type ptyConn struct {
	conn     *websocket.Conn
	text     strings.Builder // all text received
	controls []ptyControl
	// replay is the text received before the first control frame without a gap.
	replay  string
	replied bool
}

// units is what a JavaScript client adds up: UTF-16 code units.
func units(s string) int64 { return int64(len(utf16.Encode([]rune(s)))) }

// dialPty opens the connect WebSocket at path (query included) of base, with token
// (none when "") and extra headers; it returns the handshake's status on failure.
func dialPty(t testing.TB, base, path, token string, header http.Header) (*ptyConn, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := http.Header{}
	for k, v := range header {
		h[k] = v
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil {
			return nil, resp.StatusCode
		}
		t.Fatalf("dial %s: %v", path, err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &ptyConn{conn: conn}, http.StatusSwitchingProtocols
}

// readUntil reads until cond holds (0 returned) or the server closes (its status).
func (c *ptyConn) readUntil(t testing.TB, cond func(*ptyConn) bool) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond(c) {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				return st
			}
			t.Fatalf("read: %v (text so far %q)", err, c.text.String())
		}
		if typ == websocket.MessageText {
			c.text.Write(data)
			continue
		}
		if len(data) == 0 || data[0] != 0 {
			t.Fatalf("binary frame %q is no control frame", data)
		}
		var ctl ptyControl
		if err := json.Unmarshal(data[1:], &ctl); err != nil {
			t.Fatalf("control frame %q: %v", data, err)
		}
		c.controls = append(c.controls, ctl)
		if ctl.Gap == nil && !c.replied {
			c.replied, c.replay = true, c.text.String()
		}
	}
	return 0
}

// toClose reads everything up to the close and returns its status.
func (c *ptyConn) toClose(t testing.TB) websocket.StatusCode {
	t.Helper()
	return c.readUntil(t, func(*ptyConn) bool { return false })
}

func (c *ptyConn) send(t testing.TB, typ websocket.MessageType, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, typ, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// ptyScript echoes each line it reads as in:<line>, until the line q.
const ptyScript = `stty -echo; printf 'A é 世 😀\n'; while read l; do printf 'in:%s\n' "$l"; [ "$l" = q ] && exit 0; done`

func (ts *testServer) createPty(sb, script string) ptyJSON {
	ts.t.Helper()
	var p ptyJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/opencode/pty", map[string]any{"command": "sh", "args": []string{"-c", script}}).json(ts.t, &p)
	return p
}

func TestOpenCodeConnectResume(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	p := ts.createPty("oc1", ptyScript)
	path := ocBase + "/" + p.ID + "/connect"

	// From the start: the replay, the control frame with its units, then input both
	// ways and the live echo.
	c, _ := dialPty(t, ts.url, path, testToken, nil)
	c.readUntil(t, func(c *ptyConn) bool { return strings.Contains(c.text.String(), "😀") && c.replied })
	if got := c.controls[0].Cursor; got != units(c.replay) {
		t.Fatalf("cursor %d after a replay of %d units %q", got, units(c.replay), c.replay)
	}
	c.send(t, websocket.MessageText, "abc\r")
	c.send(t, websocket.MessageBinary, "déf\r")
	c.readUntil(t, func(c *ptyConn) bool { return strings.Contains(c.text.String(), "in:déf") })
	if !strings.Contains(c.text.String(), "in:abc") {
		t.Fatalf("text %q", c.text.String())
	}
	first := c.text.String()
	cursor := units(first)
	c.conn.Close(websocket.StatusNormalClosure, "")

	// Output while nobody is connected, then the exit.
	ts.must(http.StatusNoContent, "POST", "/v1/sandboxes/oc1/processes/"+p.ID+"/input", map[string]any{"text": "ü😀x 中\rq\r"})
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+p.ID+"?wait_ms=20000", nil)

	// Resume from the cursor: exactly the rest, then the close.
	c2, _ := dialPty(t, ts.url, fmt.Sprintf("%s?cursor=%d", path, cursor), testToken, nil)
	if st := c2.toClose(t); st != websocket.StatusNormalClosure {
		t.Fatalf("close %d", st)
	}
	// The whole text, from the start.
	c3, _ := dialPty(t, ts.url, path, testToken, nil)
	if st := c3.toClose(t); st != websocket.StatusNormalClosure {
		t.Fatalf("close %d", st)
	}
	all := c3.text.String()
	if first+c2.text.String() != all || !strings.Contains(all, "in:ü😀x 中") {
		t.Fatalf("resumed text %q + %q, want %q", first, c2.text.String(), all)
	}
	for _, c := range []*ptyConn{c2, c3} {
		if len(c.controls) != 1 || c.controls[0].Cursor != units(all) {
			t.Fatalf("controls %+v, want one at %d", c.controls, units(all))
		}
	}
	// Inside the emoji's surrogate pair: from just before it.
	at := units(all[:strings.Index(all, "😀")])
	c4, _ := dialPty(t, ts.url, fmt.Sprintf("%s?cursor=%d", path, at+1), testToken, nil)
	c4.toClose(t)
	if want := all[strings.Index(all, "😀"):]; c4.text.String() != want {
		t.Fatalf("from unit %d: %q, want %q", at+1, c4.text.String(), want)
	}
	// -1: the end, nothing replayed.
	c5, _ := dialPty(t, ts.url, path+"?cursor=-1", testToken, nil)
	if st := c5.toClose(t); st != websocket.StatusNormalClosure || c5.text.Len() != 0 || len(c5.controls) != 1 || c5.controls[0].Cursor != units(all) {
		t.Fatalf("cursor -1: close %d, text %q, controls %+v", st, c5.text.String(), c5.controls)
	}
}

func TestOpenCodeConnectLive(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	p := ts.createPty("oc1", ptyScript)
	c, _ := dialPty(t, ts.url, ocBase+"/"+p.ID+"/connect?cursor=-1", testToken, nil)
	c.readUntil(t, func(c *ptyConn) bool { return c.replied })
	if c.replay != "" {
		t.Fatalf("cursor -1 replayed %q", c.replay)
	}
	base := c.controls[0].Cursor
	c.send(t, websocket.MessageText, "live 🚀\r")
	c.readUntil(t, func(c *ptyConn) bool { return strings.Contains(c.text.String(), "in:live 🚀") })
	c.send(t, websocket.MessageText, "q\r")
	if st := c.toClose(t); st != websocket.StatusNormalClosure {
		t.Fatalf("close %d", st)
	}
	// What a client counted is the server's count: a resume from it replays nothing.
	end := base + units(c.text.String())
	c2, _ := dialPty(t, ts.url, fmt.Sprintf("%s/%s/connect?cursor=%d", ocBase, p.ID, end), testToken, nil)
	if st := c2.toClose(t); st != websocket.StatusNormalClosure || c2.text.Len() != 0 || c2.controls[0].Cursor != end {
		t.Fatalf("resume at the end: close %d, text %q, controls %+v", st, c2.text.String(), c2.controls)
	}
}

func TestOpenCodeConnectOutOfRing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{limits: actor.Budget{OutputBufferBytes: 64 << 10}})
	ts.sandbox("oc1")
	// 200 KiB of 3-byte characters, then a marker: the ring keeps the last 64 KiB.
	p := ts.createPty("oc1", `stty -echo; i=0; while [ $i -lt 2000 ]; do printf '世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世界世\n'; i=$((i+1)); done; echo END`)
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+p.ID+"?wait_ms=60000", nil)
	c, _ := dialPty(t, ts.url, ocBase+"/"+p.ID+"/connect?cursor=5", testToken, nil)
	if st := c.toClose(t); st != websocket.StatusNormalClosure {
		t.Fatalf("close %d", st)
	}
	if len(c.controls) != 2 || c.controls[0].Gap == nil || c.controls[0].Gap.From != 5 {
		t.Fatalf("controls %+v", c.controls)
	}
	gap, end := c.controls[0], c.controls[1]
	if gap.Gap.To != gap.Cursor || gap.Cursor <= 5 || end.Cursor != gap.Cursor+units(c.text.String()) ||
		!strings.HasSuffix(c.text.String(), "END\r\n") {
		t.Fatalf("gap %+v, end %+v, %d units of text", gap, end, units(c.text.String()))
	}
	// The text after the gap is the tail of what a client from the start would have
	// had: it starts on a character boundary of the same lines.
	if strings.ContainsRune(c.text.String(), '\uFFFD') {
		t.Fatalf("text after the gap has replacement characters: a cut inside a character")
	}
}

func TestOpenCodeConnectAuth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	ts.sandbox("oc2")
	p := ts.createPty("oc1", ptyScript)
	other := ts.createPty("oc1", ptyScript)
	var pipe processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/oc1/processes", map[string]any{"command": "sleep 30"}).json(t, &pipe)
	ticket := func(id string) string {
		var tk ticketJSON
		ts.must(http.StatusOK, "POST", ocBase+"/"+id+"/connect-token", nil).json(t, &tk)
		if tk.Ticket == "" || tk.ExpiresIn <= 0 || tk.ExpiresIn > 60 {
			t.Fatalf("ticket %+v", tk)
		}
		return tk.Ticket
	}
	connect := func(sb, id string) string { return "/v1/sandboxes/" + sb + "/opencode/pty/" + id + "/connect" }

	t.Run("ticket works once", func(t *testing.T) {
		tk := ticket(p.ID)
		c, st := dialPty(t, ts.url, connect("oc1", p.ID)+"?ticket="+tk, "", nil)
		if st != http.StatusSwitchingProtocols {
			t.Fatalf("status %d", st)
		}
		c.readUntil(t, func(c *ptyConn) bool { return c.replied })
		if _, st := dialPty(t, ts.url, connect("oc1", p.ID)+"?ticket="+tk, "", nil); st != http.StatusUnauthorized {
			t.Fatalf("second use: %d", st)
		}
	})
	t.Run("ticket is for its pty", func(t *testing.T) {
		tk := ticket(p.ID)
		if _, st := dialPty(t, ts.url, connect("oc1", other.ID)+"?ticket="+tk, "", nil); st != http.StatusUnauthorized {
			t.Fatalf("other pty: %d", st)
		}
	})
	t.Run("ticket is for its sandbox", func(t *testing.T) {
		tk := ticket(p.ID)
		if _, st := dialPty(t, ts.url, connect("oc2", p.ID)+"?ticket="+tk, "", nil); st != http.StatusUnauthorized {
			t.Fatalf("other sandbox: %d", st)
		}
	})
	t.Run("ticket expires", func(t *testing.T) {
		tk := ticket(p.ID)
		ts.srv.tickets.mu.Lock()
		ts.srv.tickets.now = func() time.Time { return time.Now().Add(ticketTTL) }
		ts.srv.tickets.mu.Unlock()
		defer func() {
			ts.srv.tickets.mu.Lock()
			ts.srv.tickets.now = time.Now
			ts.srv.tickets.mu.Unlock()
		}()
		if _, st := dialPty(t, ts.url, connect("oc1", p.ID)+"?ticket="+tk, "", nil); st != http.StatusUnauthorized {
			t.Fatalf("expired: %d", st)
		}
	})
	t.Run("wrong ticket and no token", func(t *testing.T) {
		for _, q := range []string{"?ticket=nope", ""} {
			if _, st := dialPty(t, ts.url, connect("oc1", p.ID)+q, "", nil); st != http.StatusUnauthorized {
				t.Fatalf("%q: %d", q, st)
			}
		}
	})
	t.Run("token in the query", func(t *testing.T) {
		c, st := dialPty(t, ts.url, connect("oc1", p.ID)+"?token="+testToken, "", nil)
		if st != http.StatusSwitchingProtocols {
			t.Fatalf("status %d", st)
		}
		c.readUntil(t, func(c *ptyConn) bool { return c.replied })
	})
	t.Run("foreign page", func(t *testing.T) {
		if _, st := dialPty(t, ts.url, connect("oc1", p.ID), testToken, http.Header{"Origin": {"https://evil.example"}}); st != http.StatusForbidden {
			t.Fatalf("status %d", st)
		}
	})
	t.Run("unknown pty closes 1008", func(t *testing.T) {
		for _, id := range []string{"proc_nope", pipe.ID} {
			c, st := dialPty(t, ts.url, connect("oc1", id), testToken, nil)
			if st != http.StatusSwitchingProtocols {
				t.Fatalf("%s: status %d", id, st)
			}
			if got := c.toClose(t); got != websocket.StatusPolicyViolation {
				t.Fatalf("%s: close %d", id, got)
			}
		}
	})
}

// TestOpenCodeConnectSkipped: a client that stops reading for longer than the hold
// bound is skipped; when it reads again it gets a control frame whose gap starts at
// exactly the units it had received, and the text after it counts on to the server's
// own end.
func TestOpenCodeConnectSkipped(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{limits: actor.Budget{OutputBufferBytes: 64 << 10},
		streamHoldBound: 200 * time.Millisecond, wsWriteTimeout: 2 * time.Minute})
	ts.sandbox("oc1")
	p := ts.createPty("oc1", `stty -echo; read x; yes 'héllo wörld 世界 😀' | head -c 8000000; echo END`)
	// A small receive buffer, so that a client that reads nothing soon holds the
	// server's writes up. 8 MB of output is well over what the server's socket can
	// buffer (at most 4 MiB by Linux's default tcp_wmem) and the ring (64 KiB).
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+ocBase+"/"+p.ID+"/connect", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}},
	})
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	defer conn.CloseNow()
	c := &ptyConn{conn: conn}
	c.readUntil(t, func(c *ptyConn) bool { return c.replied })
	c.send(t, websocket.MessageText, "go\r")
	// Read nothing until the process has exited: it went on without this client.
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+p.ID+"?wait_ms=120000", nil)
	got := int64(0) // the units received, as the client counts its cursor
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("read: %v", err)
			}
			break
		}
		if typ == websocket.MessageText {
			got += units(string(data))
			continue
		}
		var ctl ptyControl
		if err := json.Unmarshal(data[1:], &ctl); err != nil {
			t.Fatal(err)
		}
		c.controls = append(c.controls, ctl)
		if ctl.Gap != nil {
			if ctl.Gap.From != got || ctl.Gap.To != ctl.Cursor || ctl.Cursor <= got {
				t.Fatalf("gap %+v after %d units", ctl, got)
			}
			got = ctl.Cursor
		}
	}
	gaps := 0
	for _, ctl := range c.controls[1:] {
		if ctl.Gap != nil {
			gaps++
		}
	}
	if gaps == 0 {
		t.Fatalf("no gap for a client that read nothing: controls %+v", c.controls)
	}
	end, _ := dialPty(t, ts.url, ocBase+"/"+p.ID+"/connect?cursor=-1", testToken, nil)
	end.toClose(t)
	if want := end.controls[0].Cursor; got != want {
		t.Fatalf("client counted %d units, the server's end is %d", got, want)
	}
}

// TestOpenCodeConnectInvalidBytes streams output that is not all valid UTF-8: each
// invalid byte is one U+FFFD, a sequence cut between two writes waits for its end
// (the replay stops before it, with its control frame), and the bytes of a sequence
// never finished are U+FFFD each at the exit; the cursors add up to the text's units,
// and valid output after the invalid bytes is streamed as it is.
func TestOpenCodeConnectInvalidBytes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	p := ts.createPty("oc1", `stty -echo; printf 'a\377b \342\202'; read l; printf '\254 \300 ok 😀 '; read l; printf 'é\360\237'`)
	eventually(t, 30*time.Second, "the first printf's 6 bytes in the ring", func() bool {
		var st struct {
			OutputOffset int64 `json:"output_offset"`
		}
		ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+p.ID, nil).json(t, &st)
		return st.OutputOffset >= 6
	})
	path := ocBase + "/" + p.ID + "/connect"
	c, _ := dialPty(t, ts.url, path, testToken, nil)
	c.readUntil(t, func(c *ptyConn) bool { return c.replied })
	if c.replay != "a\uFFFDb " || c.controls[0].Cursor != 4 {
		t.Fatalf("replay %q, controls %+v", c.replay, c.controls)
	}
	c.send(t, websocket.MessageText, "\r")
	c.readUntil(t, func(c *ptyConn) bool { return strings.HasSuffix(c.text.String(), "😀 ") })
	c.send(t, websocket.MessageText, "\r")
	if st := c.toClose(t); st != websocket.StatusNormalClosure {
		t.Fatalf("close %d", st)
	}
	want := "a\uFFFDb € \uFFFD ok 😀 é\uFFFD\uFFFD"
	if c.text.String() != want {
		t.Fatalf("text %q, want %q", c.text.String(), want)
	}
	// A resume from every cursor a client could hold gives exactly the rest.
	all := c.text.String()
	for i := range all {
		if !utf8.RuneStart(all[i]) {
			continue
		}
		r, code := dialPty(t, ts.url, fmt.Sprintf("%s?cursor=%d", path, units(all[:i])), testToken, nil)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("dial: %d", code)
		}
		if st := r.toClose(t); st != websocket.StatusNormalClosure || r.text.String() != all[i:] || r.controls[0].Cursor != units(all) {
			t.Fatalf("from %d: close %d, %q, controls %+v; want %q", units(all[:i]), st, r.text.String(), r.controls, all[i:])
		}
	}
}
