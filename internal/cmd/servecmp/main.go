// Command servecmp compares two builds of `sandgate serve` side by side, for figures
// that must be a ratio against an earlier build measured in the same run: it starts
// both on loopback with fresh data directories, alternates requests between them
// (sandbox create, then session exec of `true`), and prints each p50 and their
// ratio per round.
//
//	git worktree add /tmp/before <rev> && (cd /tmp/before && go build -o /tmp/old ./cmd/sandgate)
//	go build -o /tmp/new ./cmd/sandgate
//	go run ./internal/cmd/servecmp /tmp/old /tmp/new
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// node is one running serve.
type node struct {
	cmd *exec.Cmd
	url string
}

// start runs bin serve on a free loopback port with data in dir and waits until it listens.
func start(bin, dir string) *node {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--raft-listen", "127.0.0.1:0", "--data", dir, "--token", "tok", "--disk-images=false")
	pr, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return &node{cmd: cmd, url: "http://" + addr}
}

var client = &http.Client{}

// do sends one JSON request with the token and returns the status and body.
func do(url, method, path string, body any) (int, []byte) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// p50 is the median of d (sorted in place).
func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: servecmp OLD-BINARY NEW-BINARY")
		os.Exit(2)
	}
	old, nw := os.Args[1], os.Args[2]
	for r := 0; r < 3; r++ {
		dirs := []string{}
		nodes := []*node{}
		for _, b := range []string{old, nw} {
			dir, _ := os.MkdirTemp("", "sncmp")
			dirs = append(dirs, dir)
			nodes = append(nodes, start(b, dir))
		}
		cr := [2][]time.Duration{}
		ex := [2][]time.Duration{}
		per := 100
		for i := 0; i < per; i++ {
			for k, n := range nodes {
				id := fmt.Sprintf("s%d", i)
				t0 := time.Now()
				if st, body := do(n.url, "POST", "/v1/sandboxes", map[string]any{"id": id}); st != 201 {
					panic(fmt.Sprint(st, string(body)))
				}
				cr[k] = append(cr[k], time.Since(t0))
			}
		}
		for _, n := range nodes {
			do(n.url, "POST", "/v1/sandboxes/s0/sessions", map[string]any{"id": "main"})
		}
		for i := 0; i < per*2; i++ {
			for k, n := range nodes {
				t0 := time.Now()
				if st, body := do(n.url, "POST", "/v1/sandboxes/s0/sessions/main/exec", map[string]any{"command": "true"}); st != 200 {
					panic(fmt.Sprint(st, string(body)))
				}
				ex[k] = append(ex[k], time.Since(t0))
			}
		}
		for k, n := range nodes {
			n.cmd.Process.Signal(os.Interrupt)
			n.cmd.Wait()
			os.RemoveAll(dirs[k])
		}
		o0, w0, o1, w1 := p50(cr[0]), p50(cr[1]), p50(ex[0]), p50(ex[1])
		fmt.Printf("round %d: create old %v new %v (%.2fx); session exec old %v new %v (%.2fx)\n", r,
			o0, w0, float64(w0)/float64(o0), o1, w1, float64(w1)/float64(o1))
	}
}
