package gateway

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/cluster"
)

func TestForwardedRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pattern string
		want    bool
	}{
		{"create", "POST /v1/sandboxes", true},
		{"list", "GET /v1/sandboxes", false},
		{"get", "GET " + sbPath, true},
		{"delete", "DELETE " + sbPath, true},
		{"terminal ws", "GET " + termPath + "/ws", true},
		{"cluster", "GET /v1/cluster", false},
		{"whoami", "GET /v1/whoami", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forwardedRoute(tt.pattern); got != tt.want {
				t.Fatalf("forwardedRoute(%q) = %v", tt.pattern, got)
			}
		})
	}
}

func TestHopsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header string
		want         int
		bad          bool
	}{
		{"client", "", 0, false},
		{"one hop", "1", 1, false},
		{"many", "7", 7, false},
		{"negative", "-1", 0, true},
		{"junk", "two", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/sandboxes/x", nil)
			if tt.header != "" {
				r.Header.Set(hopsHeader, tt.header)
			}
			got, err := hopsOf(r)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("hopsOf(%q) = %d, %v", tt.header, got, err)
			}
		})
	}
}

// TestReplayBody: a body up to the bound is buffered and sent any number of times; a
// bigger one is streamed, and may be sent again only while none of it went.
func TestReplayBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		size     int
		chunked  bool
		streamed bool
	}{
		{"empty", 0, false, false},
		{"small", 100, false, false},
		{"at the bound", maxBufferedBody, false, false},
		{"chunked small", 100, true, false},
		{"over the bound", maxBufferedBody + 1, false, true},
		{"chunked over the bound", maxBufferedBody + 10, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("z"), tt.size)
			r := httptest.NewRequest("PUT", "/x", bytes.NewReader(data))
			if tt.chunked {
				r.ContentLength = -1
			}
			b, err := readBody(r)
			if err != nil {
				t.Fatal(err)
			}
			if b.streamed() != tt.streamed || !b.ready() {
				t.Fatalf("streamed %v ready %v", b.streamed(), b.ready())
			}
			for i := 0; i < 2; i++ {
				out := r.Clone(r.Context())
				b.attach(out)
				var got []byte
				if out.Body != nil {
					got, _ = io.ReadAll(out.Body)
				}
				if i == 0 || !tt.streamed {
					if !bytes.Equal(got, data) {
						t.Fatalf("attempt %d: %d bytes, want %d", i, len(got), len(data))
					}
					if !tt.streamed && out.GetBody == nil && tt.size > 0 {
						t.Fatal("a buffered body has no GetBody")
					}
				}
				if tt.streamed && b.ready() {
					t.Fatal("a streamed body that was sent is still ready")
				}
			}
			w := httptest.NewRecorder()
			local := b.restore(w, r, defaultBodyReadTimeout)
			if !tt.streamed {
				got, _ := io.ReadAll(local.Body)
				if !bytes.Equal(got, data) || local.ContentLength != int64(tt.size) {
					t.Fatalf("restored: %d bytes, length %d", len(got), local.ContentLength)
				}
			}
		})
	}
}

// TestCreateTarget: the id a create goes by, and the body sent on.
func TestCreateTarget(t *testing.T) {
	t.Parallel()
	s := &Server{}
	tests := []struct {
		name   string
		body   string
		makeID bool
		want   string // "made": an id made here; "": served where it arrived
	}{
		{"id given", `{"id": "box1", "labels": {"a": "b"}}`, true, "box1"},
		{"no id", `{"labels": {"a": "b"}}`, true, "made"},
		{"null id", `{"id": null}`, true, "made"},
		{"empty body", ``, true, "made"},
		{"null body", `null`, true, "made"},
		{"no id on the owner: the accepting node's", `{}`, false, "sb_fromtheclient0"},
		{"a client's made id is not taken", `{}`, true, "made"},
		{"bad id", `{"id": "Bad Id"}`, true, ""},
		{"id not a string", `{"id": 7}`, true, ""},
		{"unknown field", `{"nope": 1}`, true, ""},
		{"trailing data", `{} {}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/sandboxes", strings.NewReader(tt.body))
			r.Header.Set(madeIDHeader, "sb_fromtheclient0") // replaced at the accepting node
			sb, body, err := s.createTarget(r, tt.makeID)
			if err != nil {
				t.Fatal(err)
			}
			switch tt.want {
			case "made":
				if !strings.HasPrefix(sb, "sb_") || len(sb) != 3+16 || r.Header.Get(madeIDHeader) != sb {
					t.Fatalf("made id %q, header %q", sb, r.Header.Get(madeIDHeader))
				}
				if string(body.buf) != tt.body {
					t.Fatalf("body changed to %s", body.buf)
				}
				// The owner goes by the header.
				r.Header.Set(hopsHeader, "1")
				if again, _, err := s.createTarget(r, false); err != nil || again != sb {
					t.Fatalf("the owner reads %q, %v; want %q", again, err, sb)
				}
			default:
				if sb != tt.want {
					t.Fatalf("id %q, want %q", sb, tt.want)
				}
				if string(body.buf) != tt.body {
					t.Fatalf("body changed to %s", body.buf)
				}
			}
		})
	}
}

// TestStreamRegistryHammer: streams added, removed and swept from many goroutines at
// once: every stream is stopped at most once, and every stream of a lost sandbox that
// is still registered at a sweep is stopped by it.
func TestStreamRegistryHammer(t *testing.T) {
	t.Parallel()
	g := newStreamRegistry()
	lost := func(sb string) error {
		if strings.HasPrefix(sb, "lost") {
			return &cluster.NotOwnerError{SandboxID: sb}
		}
		return nil
	}
	var mu sync.Mutex
	stops := map[int]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				id := w*1000 + i
				sb := []string{"lost", "kept"}[i%2]
				remove := g.add(sb, func() { mu.Lock(); stops[id]++; mu.Unlock() })
				if i%3 == 0 {
					remove()
				}
				if i%50 == 0 {
					g.sweep(lost)
				}
			}
		}()
	}
	wg.Wait()
	g.sweep(lost)
	if n := g.count("lost"); n != 0 {
		t.Fatalf("%d streams of a lost sandbox left", n)
	}
	for id, n := range stops {
		if n != 1 {
			t.Fatalf("stream %d stopped %d times", id, n)
		}
		if (id%1000)%2 != 0 {
			t.Fatalf("stream %d of a kept sandbox was stopped", id)
		}
	}
	if g.count("kept") == 0 {
		t.Fatal("no kept stream left registered")
	}
}
