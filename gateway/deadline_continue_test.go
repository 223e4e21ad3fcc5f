package gateway

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEarlyAnswerAfterContinue: a client that sent Expect: 100-continue, got its 100
// and is sending its body, is answered an error before the whole body was read (here a
// JSON body over its 1 MiB limit; on a forwarded upload, an owner whose workspace is
// full). The server reads the rest while the client is still sending it, and only then
// closes the connection: its close is a FIN, not a reset. A reset would race the
// answer on the client's side; a forwarding node's transport then reports the write
// error instead of the owner's answer.
func TestEarlyAnswerAfterContinue(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	const size = 3 << 20
	body := `{"command":"` + strings.Repeat("x", size-len(`{"command":""}`)) + `"}`
	tests := []struct {
		name    string
		framing string // the header that says how long the body is
		body    string // as sent
	}{
		{"length", fmt.Sprintf("Content-Length: %d", size), body},
		{"chunked", "Transfer-Encoding: chunked", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", size, body)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := rawConn(t, ts)
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			head := "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken +
				"\r\nContent-Type: application/json\r\n" + tt.framing + "\r\nExpect: 100-continue\r\n\r\n"
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			cont, err := http.ReadResponse(br, nil)
			if err != nil || cont.StatusCode != http.StatusContinue {
				t.Fatalf("before the body: %v %v, want 100 Continue", cont, err)
			}
			wrote := make(chan error, 1)
			go func() {
				_, err := io.WriteString(c, tt.body)
				wrote <- err
			}()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
				t.Fatalf("answer %d %s (Connection: close %v), want 413 with Connection: close", resp.StatusCode, msg, resp.Close)
			}
			rest, err := io.ReadAll(br)
			if err != nil || len(rest) != 0 {
				t.Fatalf("after the answer: %q %v, want the connection closed with a FIN", rest, err)
			}
			if err := <-wrote; err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("the body's write: %v, want it read whole", err)
			}
		})
	}
}
