package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// keepAliveClient sends one fixed request again and again over one kept-alive
// connection, on the caller's goroutine, the way curl, wrk or a single-threaded SDK
// would. The exec benchmarks time the server with it: net/http's Transport hands every
// request to a writer and a reader goroutine of its own, and on this 2-vCPU machine those
// hand-offs cost as much as the server does (the benchmarks report that client too).
type keepAliveClient struct {
	conn net.Conn
	br   *bufio.Reader
	req  []byte
}

func newKeepAliveClient(tb testing.TB, addr, method, path, token, body string) *keepAliveClient {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	req := []byte(method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n")
	if token != "" {
		req = append(req, "Authorization: Bearer "+token+"\r\n"...)
	}
	req = append(req, "Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body...)
	return &keepAliveClient{conn: conn, br: bufio.NewReader(conn), req: req}
}

// do sends the request and reads the whole response, which must have status 200.
func (c *keepAliveClient) do() error { return c.expect(http.StatusOK) }

// drainOK reads and closes resp's body and fails unless the status was 200.
func drainOK(resp *http.Response) error {
	_, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

// expect sends the request and reads the whole response, which must have status want.
func (c *keepAliveClient) expect(want int) error {
	if _, err := c.conn.Write(c.req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != want {
		err = fmt.Errorf("status %d, want %d", resp.StatusCode, want)
	}
	return err
}
