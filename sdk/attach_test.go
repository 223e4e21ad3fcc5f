package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsConnScript says what one connection of the wsPeer does.
type wsConnScript struct {
	frames   int    // output frames to send; -1 sends all the rest
	rewind   int64  // start this many bytes before the asked offset (a server replaying extra)
	waitMsgs int    // client messages to receive before sending
	end      string // "drop", "tryagain", "restart", "normal", "exit" or "stream" (until the client leaves)
	shell    string // the terminal's process before this connection ("" : proc_1)
}

// wsPeer serves GET …/terminals/t/ws per a script, one entry per connection.
type wsPeer struct {
	out    string
	script []wsConnScript

	mu      sync.Mutex
	offsets []string
	auth    []string
	msgs    []string // client messages: "bin:<bytes>" or "text:<json>"
	closed  []websocket.StatusCode
	gotMsg  chan struct{}
}

func (p *wsPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/ws") { // GET …/terminals/t1: its shell
		p.mu.Lock()
		shell := "proc_1"
		if n := len(p.offsets); n < len(p.script) && p.script[n].shell != "" {
			shell = p.script[n].shell
		}
		p.mu.Unlock()
		fmt.Fprintf(w, `{"id":"t1","process":%q,"status":"running"}`, shell)
		return
	}
	p.mu.Lock()
	n := len(p.offsets)
	p.offsets = append(p.offsets, r.URL.Query().Get("offset"))
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	p.mu.Unlock()
	if n >= len(p.script) {
		writeAPIError(w, http.StatusNotFound, CodeNotFound, "no more scripted connections")
		return
	}
	s := p.script[n]
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	readerDone := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				readerDone <- websocket.CloseStatus(err)
				return
			}
			p.mu.Lock()
			if typ == websocket.MessageBinary {
				p.msgs = append(p.msgs, "bin:"+string(b))
			} else {
				p.msgs = append(p.msgs, "text:"+string(b))
			}
			p.mu.Unlock()
			p.gotMsg <- struct{}{}
		}
	}()
	off, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	off = max(off-s.rewind, 0)
	ready, _ := json.Marshal(map[string]any{"type": "ready", "offset": off})
	if conn.Write(ctx, websocket.MessageText, ready) != nil {
		return
	}
	for range s.waitMsgs {
		select {
		case <-p.gotMsg:
		case <-ctx.Done():
			return
		}
	}
	for i := 0; off < int64(len(p.out)) && (s.frames < 0 || i < s.frames); i++ {
		end := min(off+5, int64(len(p.out)))
		if conn.Write(ctx, websocket.MessageBinary, []byte(p.out[off:end])) != nil {
			return
		}
		off = end
	}
	switch s.end {
	case "drop":
		return // CloseNow: no close frame
	case "tryagain":
		conn.Close(websocket.StatusTryAgainLater, "slow client")
	case "restart": // the sandbox moved to another node
		conn.Close(websocket.StatusServiceRestart, "the sandbox moved to another node")
	case "normal":
		conn.Close(websocket.StatusNormalClosure, "")
	case "exit":
		conn.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","exit_code":7}`))
		conn.Close(websocket.StatusNormalClosure, "")
	case "stream":
		for {
			select {
			case code := <-readerDone:
				p.mu.Lock()
				p.closed = append(p.closed, code)
				p.mu.Unlock()
				return
			case <-time.After(5 * time.Millisecond):
				if conn.Write(ctx, websocket.MessageBinary, []byte("tick")) != nil {
					return
				}
			}
		}
	}
}

func newWSPeer(out string, script ...wsConnScript) *wsPeer {
	return &wsPeer{out: out, script: script, gotMsg: make(chan struct{}, 100)}
}

// readAll reads an attachment to its end and returns the output and the final error.
func readAll(t *testing.T, a *Attachment) (string, []AttachEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	var evs []AttachEvent
	for {
		ev, err := a.Next(ctx)
		if err != nil {
			return b.String(), evs, err
		}
		evs = append(evs, ev)
		b.Write(ev.Data)
	}
}

const wsOut = "0123456789abcdefghijklmnopqrstuvwxyz"

func TestAttachReconnects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		offset      int64
		script      []wsConnScript
		retries     int
		want        string
		wantOffsets string
		wantErr     error
		wantExit    bool
		restarts    int // ready events flagged Restarted
	}{
		{"no drop", 0, []wsConnScript{{frames: -1, end: "exit"}}, 2, wsOut, "[0]", io.EOF, true, 0},
		{"server default offset", -1, []wsConnScript{{frames: -1, end: "exit"}}, 2, wsOut, "[]", io.EOF, true, 0},
		{"drop resumes at offset", 3, []wsConnScript{{frames: 2, end: "drop"}, {frames: 1, end: "tryagain"}, {frames: -1, end: "exit"}},
			2, wsOut[3:], "[3 13 18]", io.EOF, true, 0},
		{"a sandbox move (1012) resumes at offset", 0, []wsConnScript{{frames: 2, end: "restart"}, {frames: 1, end: "restart"}, {frames: -1, end: "exit"}},
			2, wsOut, "[0 10 15]", io.EOF, true, 0},
		{"replayed bytes are trimmed", 0, []wsConnScript{{frames: 3, end: "drop"}, {frames: -1, rewind: 7, end: "exit"}},
			2, wsOut, "[0 15]", io.EOF, true, 0},
		{"normal close does not reconnect", 0, []wsConnScript{{frames: 2, end: "normal"}}, 2, wsOut[:10], "[0]", io.EOF, false, 0},
		{"gives up after retries", 0, []wsConnScript{{frames: 1, end: "drop"}, {frames: 0, end: "drop"}, {frames: 0, end: "drop"}},
			1, wsOut[:5], "[0 5]", io.ErrUnexpectedEOF, false, 0},
		{"non-retryable dial error ends", 0, []wsConnScript{{frames: 1, end: "drop"}}, 3, wsOut[:5], "[0 5]", nil, false, 0},
		{"a new shell is streamed from its start", 0, []wsConnScript{{frames: 3, end: "drop"}, {frames: -1, shell: "proc_2", end: "exit"}},
			2, wsOut[:15] + wsOut, "[0 0]", io.EOF, true, 1},
		{"the same shell resumes", 0, []wsConnScript{{frames: 3, end: "drop", shell: "proc_2"}, {frames: -1, shell: "proc_2", end: "exit"}},
			2, wsOut, "[0 15]", io.EOF, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newWSPeer(wsOut, tt.script...)
			c := newTestClient(t, p, tt.retries)
			a, err := c.Attach(t.Context(), "sb1", AttachTerminal, "t1", tt.offset)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			got, evs, err := readAll(t, a)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && (err == nil || errors.Is(err, io.EOF) || errors.Is(err, ErrAttachmentClosed)) {
				t.Fatalf("final err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
			p.mu.Lock()
			offsets := fmt.Sprint(p.offsets)
			auth := p.auth[0]
			p.mu.Unlock()
			if tt.wantOffsets != "[]" && offsets != tt.wantOffsets || tt.wantOffsets == "[]" && offsets != "[]" && offsets != "[ ]" {
				t.Errorf("requested offsets = %s, want %s", offsets, tt.wantOffsets)
			}
			if auth != "Bearer tok" {
				t.Errorf("Authorization = %q", auth)
			}
			gotExit := len(evs) > 0 && evs[len(evs)-1].Type == AttachExit
			if gotExit != tt.wantExit {
				t.Errorf("exit event = %v, want %v (events %+v)", gotExit, tt.wantExit, evs)
			}
			if gotExit && (evs[len(evs)-1].ExitCode == nil || *evs[len(evs)-1].ExitCode != 7) {
				t.Errorf("exit event = %+v, want code 7", evs[len(evs)-1])
			}
			restarts := 0
			for _, ev := range evs {
				if ev.Type == AttachReady && ev.Restarted {
					restarts++
				}
			}
			if restarts != tt.restarts {
				t.Errorf("%d ready events flagged Restarted, want %d", restarts, tt.restarts)
			}
			if evs[0].Type != AttachReady {
				t.Errorf("first event = %+v, want ready", evs[0])
			}
			if tt.wantErr != nil {
				if want := int64(len(wsOut)); tt.wantExit && a.Offset() != want {
					t.Errorf("Offset() = %d, want %d", a.Offset(), want)
				}
			}
		})
	}
}

func TestAttachSend(t *testing.T) {
	t.Parallel()
	p := newWSPeer(wsOut, wsConnScript{frames: 2, waitMsgs: 1, end: "drop"}, wsConnScript{frames: -1, waitMsgs: 2, end: "exit"})
	c := newTestClient(t, p, 3)
	a, err := c.Attach(t.Context(), "sb1", AttachProcess, "proc_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.Write(ctx, []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	// Read up to the second ready frame: the reconnect. Its server waits for two
	// messages before it sends the rest.
	var b strings.Builder
	for readies := 0; readies < 2; {
		ev, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == AttachReady {
			readies++
		}
		b.Write(ev.Data)
	}
	if err := a.Resize(ctx, PTYSize{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	if err := a.Signal(ctx, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	rest, _, err := readAll(t, a)
	if got := b.String() + rest; !errors.Is(err, io.EOF) || got != wsOut {
		t.Fatalf("output %q, err %v", got, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	want := []string{"bin:ls\r", `text:{"type":"resize","cols":120,"rows":40}`, `text:{"type":"signal","signal":"SIGINT"}`}
	if fmt.Sprintf("%q", p.msgs) != fmt.Sprintf("%q", want) {
		t.Fatalf("server got %q, want %q", p.msgs, want)
	}
	if fmt.Sprint(p.offsets) != "[0 10]" {
		t.Fatalf("offsets %v, want [0 10]", p.offsets)
	}
	if err := a.Write(ctx, []byte("x")); err == nil {
		t.Fatal("Write after the exit succeeded")
	}
}

func TestAttachClose(t *testing.T) {
	t.Parallel()
	p := newWSPeer(wsOut, wsConnScript{frames: 1, end: "stream"})
	c := newTestClient(t, p, 3)
	a, err := c.Attach(t.Context(), "sb1", AttachTerminal, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := a.Next(t.Context()); !errors.Is(err, ErrAttachmentClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := a.Write(t.Context(), []byte("x")); !errors.Is(err, ErrAttachmentClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		closed := fmt.Sprint(p.closed)
		p.mu.Unlock()
		if closed == fmt.Sprint([]websocket.StatusCode{websocket.StatusNormalClosure}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server saw close codes %s, want one normal closure", closed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAttachDialError(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, newWSPeer(wsOut), 3)
	_, err := c.Attach(t.Context(), "sb1", AttachTerminal, "nope", 0)
	if !IsNotFound(err) {
		t.Fatalf("err = %v, want not_found", err)
	}
	if _, err := c.Attach(t.Context(), "sb1", "bogus", "t", 0); err == nil {
		t.Fatal("bad kind accepted")
	}
}
