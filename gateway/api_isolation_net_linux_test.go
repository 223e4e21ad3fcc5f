package gateway

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// selfConnect is a Python program that listens on 127.0.0.1 and connects to itself:
// it prints "hi" where the sandbox's loopback works.
const selfConnect = `import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=10); a, _ = s.accept()
c.sendall(b"hi"); print(a.recv(2).decode())`

// TestIsolationNetwork: a sandbox's network by its budget. loopback (the default): no
// route out, the test's own listener and the server's API on the host's 127.0.0.1 are
// unreachable, and a listener inside on 127.0.0.1 answers itself. none: lo is down and
// nothing listens or connects. host (granted by the operator's default): the host's
// network, where both are reachable.
func TestIsolationNetwork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		network string // Config.SandboxNetwork; "" is the default
		want    string // the budget's network
		ownNet  bool   // a network namespace of its own
		loUp    bool   // lo up, and a listener inside answers itself
		reach   bool   // the test's listener on the host's 127.0.0.1 is reachable
	}{
		{network: "", want: "loopback", ownNet: true, loUp: true},
		{network: "none", want: "none", ownNet: true},
		{network: "host", want: "host", loUp: true, reach: true},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			ln := newCountingListener(t)
			ts := isoServer(t, &serverOptions{config: func(c *Config) { c.SandboxNetwork = tc.network }})
			b := newIsoBox(t, ts, "iso-net")
			var sb struct {
				Budget struct {
					Network string `json:"network"`
				} `json:"budget"`
			}
			ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+b.id, nil).json(t, &sb)
			if sb.Budget.Network != tc.want {
				t.Fatalf("budget.network %q; want %q", sb.Budget.Network, tc.want)
			}
			own, _ := os.Readlink("/proc/self/ns/net")
			theirs, err := os.Readlink("/proc/" + strconv.Itoa(b.init) + "/ns/net")
			if err != nil {
				t.Fatal(err)
			}
			if (own != theirs) != tc.ownNet {
				t.Fatalf("the sandbox's network namespace %s, this process's %s; want its own: %v", theirs, own, tc.ownNet)
			}

			if tc.ownNet {
				routes := strings.Split(strings.TrimSpace(b.sh("cat /proc/net/route")), "\n")
				if len(routes) != 1 {
					t.Fatalf("/proc/net/route inside has routes: %q; want only its header", routes)
				}
				if got := b.sh("ip -4 route show default; ip -6 route show default"); got != "" {
					t.Fatalf("a default route inside: %q", got)
				}
			}
			link := b.sh("ip -o link show lo")
			if up := strings.Contains(link, ",UP") || strings.Contains(link, "<UP"); up != tc.loUp {
				t.Fatalf("lo inside: %q; want up: %v", link, tc.loUp)
			}
			res := b.exec("python3 -c '" + selfConnect + "'")
			if works := res.ExitCode == 0 && res.Stdout == "hi\n"; works != tc.loUp {
				t.Fatalf("a listener inside connecting to itself: exit %d, %q %q; want it to work: %v", res.ExitCode, res.Stdout, res.Stderr, tc.loUp)
			}

			res = b.exec(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + ln.port() + ` && echo hello >&3 && echo connected'`)
			if connected := res.ExitCode == 0 && res.Stdout == "connected\n"; connected != tc.reach {
				t.Fatalf("connecting to the host's 127.0.0.1:%s: exit %d, %q %q; want it to connect: %v", ln.port(), res.ExitCode, res.Stdout, res.Stderr, tc.reach)
			}
			// The API's own port on the host's 127.0.0.1 likewise.
			api := strings.TrimPrefix(ts.url, "http://")
			res = b.exec("curl -sS -o /dev/null -w '%{http_code}' --max-time 10 http://" + api + "/healthz")
			if reached := res.ExitCode == 0 && res.Stdout == "200"; reached != tc.reach {
				t.Fatalf("GET /healthz of the server at %s from inside: exit %d, %q %q; want it reached: %v", api, res.ExitCode, res.Stdout, res.Stderr, tc.reach)
			}
			if tc.reach {
				eventually(t, 10*time.Second, "the test's listener to read the sandbox's hello", func() bool {
					return ln.got("hello")
				})
			} else if n := ln.accepted(); n != 0 {
				t.Fatalf("the test's listener accepted %d connections from an isolated sandbox", n)
			}
		})
	}
}

// countingListener is a TCP listener on the host's 127.0.0.1 that accepts every
// connection and records the first line each one sends.
type countingListener struct {
	ln    net.Listener
	mu    sync.Mutex
	n     int
	lines []string
}

func newCountingListener(t testing.TB) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &countingListener{ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if line, err := bufio.NewReader(conn).ReadString('\n'); err == nil {
					c.mu.Lock()
					c.lines = append(c.lines, strings.TrimSpace(line))
					c.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return c
}

func (c *countingListener) port() string {
	return strconv.Itoa(c.ln.Addr().(*net.TCPAddr).Port)
}

func (c *countingListener) accepted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingListener) got(line string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if l == line {
			return true
		}
	}
	return false
}
