package sdk

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// refusedURL returns the URL of a loopback port that was free a moment ago: nothing
// listens there, so connecting is refused.
func refusedURL(t *testing.T) string { return refusedURLTB(t) }

func refusedURLTB(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// reqLog answers every request with a sandbox object and records "METHOD path body".
type reqLog struct {
	mu   sync.Mutex
	reqs []string
}

func (r *reqLog) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path+" "+string(b))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if req.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	io.WriteString(w, `{"id":"sb1","state":"running"}`)
}

func (r *reqLog) requests() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.reqs, "\n")
}

// TestEndpointsFailOver: a request that cannot connect goes to the next endpoint,
// with its body, and the client stays there; a streamed body is not sent twice; with
// every endpoint down the connection error is returned; a bad endpoint is reported.
func TestEndpointsFailOver(t *testing.T) {
	t.Parallel()
	live := &reqLog{}
	srv := httptest.NewServer(live)
	t.Cleanup(srv.Close)
	down := refusedURL(t)

	c := New(down, "tok", &Options{Endpoints: []string{refusedURL(t), srv.URL}})
	ctx := t.Context()
	if _, _, err := c.CreateSandbox(ctx, CreateSandboxRequest{ID: "sb1"}); err != nil {
		t.Fatalf("create through the third endpoint: %v", err)
	}
	if i, _ := c.eps.current(); i != 2 {
		t.Fatalf("endpoint in use after the failover: %d, want 2", i)
	}
	if _, err := c.GetSandbox(ctx, "sb1"); err != nil {
		t.Fatal(err)
	}
	if got, want := live.requests(), "POST /v1/sandboxes {\"id\":\"sb1\"}\nGET /v1/sandboxes/sb1 "; got != want {
		t.Fatalf("the live endpoint got %q, want %q", got, want)
	}

	t.Run("streamed body", func(t *testing.T) {
		t.Parallel()
		rec := &reqLog{}
		srv := httptest.NewServer(rec)
		t.Cleanup(srv.Close)
		c := New(refusedURL(t), "tok", &Options{Endpoints: []string{srv.URL}})
		err := c.WriteFile(t.Context(), "sb1", "a.txt", strings.NewReader("data"), nil)
		if !unreachable(err) || rec.requests() != "" {
			t.Fatalf("upload to a refused endpoint: %v; the next one got %q", err, rec.requests())
		}
		if i, _ := c.eps.current(); i != 1 {
			t.Fatalf("endpoint in use after the failure: %d, want 1", i)
		}
	})
	t.Run("all down", func(t *testing.T) {
		t.Parallel()
		c := New(refusedURL(t), "tok", &Options{Endpoints: []string{refusedURL(t)}})
		if _, err := c.GetSandbox(t.Context(), "sb1"); !unreachable(err) {
			t.Fatalf("every endpoint refused: %v, want the connection error", err)
		}
	})
	t.Run("bad endpoint", func(t *testing.T) {
		t.Parallel()
		c := New(srv.URL, "tok", &Options{Endpoints: []string{"ftp://x"}})
		if _, err := c.GetSandbox(t.Context(), "sb1"); err == nil || !strings.Contains(err.Error(), `bad base URL "ftp://x"`) {
			t.Fatalf("a bad endpoint: %v", err)
		}
	})
}

// TestProcessOutputFailsOver: a stream whose node stops (its connection ends and its
// address refuses) resumes through the next endpoint, from the offset it reached.
func TestProcessOutputFailsOver(t *testing.T) {
	t.Parallel()
	cs := testChunks()
	p := &outputPeer{chunks: cs, perConn: []int{3}}
	var first *httptest.Server
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // no kept-alive connection outlives the node
		p.ServeHTTP(w, r)
		first.Listener.Close() // the node stops: its address refuses from now on
	}))
	t.Cleanup(first.Close)
	second := httptest.NewServer(p)
	t.Cleanup(second.Close)

	c := New(first.URL, "tok", &Options{Endpoints: []string{second.URL}, RetryBackoff: time.Millisecond})
	out, evs, err := collect(t, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out != allOutput(cs) || evs[len(evs)-1].Type != OutputExit {
		t.Fatalf("output %q (last event %+v), want every chunk once and the exit", out, evs[len(evs)-1])
	}
	reqs := p.requests()
	resumeAt := int64(len(cs[0].data) + len(cs[1].data) + len(cs[2].data))
	if len(reqs) != 2 || reqs[1].Get("X-Offset") != strconv.FormatInt(resumeAt, 10) {
		t.Fatalf("requests %v, want a second one from offset %d", reqs, resumeAt)
	}
	if i, _ := c.eps.current(); i != 1 {
		t.Fatalf("endpoint in use: %d, want 1", i)
	}
}

// BenchmarkEndpointsRequest: the cost of knowing several endpoints on the request
// path (an atomic load) against one, both on a live first endpoint, measured in
// interleaved rounds so that the load of a shared machine hits both alike. It reports
// ns per request of each and their ratio (three/one).
func BenchmarkEndpointsRequest(b *testing.B) {
	srv := httptest.NewServer(&reqLog{})
	b.Cleanup(srv.Close)
	one := New(srv.URL, "tok", &Options{HTTPClient: srv.Client()})
	three := New(srv.URL, "tok", &Options{HTTPClient: srv.Client(), Endpoints: []string{refusedURLTB(b), refusedURLTB(b)}})
	const round = 100
	var spent [2]time.Duration
	n := 0
	for b.Loop() {
		order := []int{0, 1}
		if n/round%2 == 1 {
			order = []int{1, 0} // alternate which goes first
		}
		for _, k := range order {
			c := []*Client{one, three}[k]
			began := time.Now()
			for range round {
				if _, err := c.GetSandbox(b.Context(), "sb1"); err != nil {
					b.Fatal(err)
				}
			}
			spent[k] += time.Since(began)
		}
		n += round
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "ns/req-one")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "ns/req-three")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "three/one")
}
