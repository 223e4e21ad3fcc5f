package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkIdleMemory measures the serve process's RSS growth for 50 idle PTY
// terminals, then for 200 idle WebSocket clients attached to one of them (issue figures:
// ≤ 64 KiB per idle PTY, ≤ 16 KiB per idle WS client). RSS includes everything the
// process maps, so it is an upper bound on what our code costs.
//
// Each figure is a marginal cost: a first batch of the same size is opened before the
// measured one. A fresh server's heap holds a megabyte or two of freed but still
// resident memory from start-up, which the first batch fills without RSS growing; how
// much there is varies from build to build and run to run, and it would make the
// figure a measure of that slack rather than of a terminal or a client.
func BenchmarkIdleMemory(b *testing.B) {
	// More WebSocket clients than terminals: a client's share is small, so 200 of them
	// keep the noise of the server's heap growth to a few hundred bytes per client.
	const tok, n, clients = "bench-token", 50, 200
	nd := startNode(b, tok)
	pid := nd.cmd.Process.Pid
	put := func(sandbox, id string) {
		req, _ := http.NewRequest("PUT", "http://"+nd.addr+"/v1/sandboxes/"+sandbox+"/terminals/"+id, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("PUT terminal %s: %v %v", id, err, resp)
		}
		resp.Body.Close()
	}
	settle := func() int64 {
		time.Sleep(500 * time.Millisecond) // let shells print their prompts and go idle
		return rss(b, pid)
	}
	// Each batch in a sandbox of its own: a sandbox's process budget is 64.
	terminals := func(sandbox string) {
		nd.post(b, tok, "/v1/sandboxes", `{"id":"`+sandbox+`"}`)
		for i := 0; i < n; i++ {
			put(sandbox, fmt.Sprintf("t%d", i))
		}
	}
	ctx := context.Background()
	var conns []*websocket.Conn
	attach := func() {
		for i := 0; i < clients; i++ {
			c, _, err := websocket.Dial(ctx, "ws://"+nd.addr+"/v1/sandboxes/warm/terminals/t0/ws?token="+tok, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.Read(ctx); err != nil { // the ready message
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
	}
	terminals("warm")
	before := settle()
	terminals("measured")
	afterPTY := settle()
	attach()
	beforeWS := settle()
	attach()
	afterWS := settle()
	for _, c := range conns {
		c.CloseNow()
	}
	runtime.KeepAlive(conns)
	b.ReportMetric(float64(afterPTY-before)/n/1024, "KiB-RSS/idle-PTY")
	b.ReportMetric(float64(afterWS-beforeWS)/clients/1024, "KiB-RSS/idle-WS-client")
}
