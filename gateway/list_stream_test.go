package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/actor"
)

// TestListSandboxesStreamed: a sandbox list longer than listFlushBytes is sent as it is
// read (chunked, no Content-Length) and a short one whole; either way the bytes are
// exactly those of the whole answer encoded at once, every sandbox once, in id order,
// for a tenant (from the owner index) and an admin (from storage, in pages) alike.
func TestListSandboxesStreamed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	const count = 300 // about 150 KiB of sandbox objects
	var ids []string
	for i := range count {
		ids = append(ids, fmt.Sprintf("l%04d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, count+1)
	create := func(id, tenant string, labels map[string]string) {
		if _, _, err := ts.srv.node.CreateSandbox(context.Background(), actor.SandboxSpec{ID: id, Tenant: tenant, Labels: labels}); err != nil {
			errs <- err
		}
	}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < count; i += 8 {
				labels := map[string]string{"tier": "bulk"}
				if i%100 == 7 {
					labels["tier"] = "few"
				}
				create(ids[i], "default", labels)
			}
		}()
	}
	wg.Wait()
	create("l-other", "acme", nil) // another tenant's: only the admin sees it
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	tests := []struct {
		name, token, query string
		want               []string
		streamed           bool
	}{
		{name: "tenant", token: testToken, want: ids, streamed: true},
		{name: "admin", token: testAdminToken, want: append([]string{"l-other"}, ids...), streamed: true},
		{name: "tenant filtered short", token: testToken, query: "?label=tier=few", want: []string{ids[7], ids[107], ids[207]}},
		{name: "admin filtered none", token: testAdminToken, query: "?label=tier=none", want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ts.doToken(tc.token, "GET", "/v1/sandboxes"+tc.query, nil)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := r.header.Get("Content-Length") == ""; got != tc.streamed {
				t.Fatalf("sent without a Content-Length: %v, want %v (%d bytes)", got, tc.streamed, len(r.body))
			}
			var list struct {
				Sandboxes []sandboxJSON `json:"sandboxes"`
			}
			r.json(t, &list)
			got := []string{}
			for _, sb := range list.Sandboxes {
				got = append(got, sb.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("listed %d sandboxes, want %d in id order, once each", len(got), len(tc.want))
			}
			whole, err := json.Marshal(map[string]any{"sandboxes": list.Sandboxes})
			if err != nil {
				t.Fatal(err)
			}
			if string(r.body) != string(whole)+"\n" {
				t.Fatalf("the streamed bytes differ from the whole answer encoded at once")
			}
		})
	}
}

// TestJSONListErrors: an error before anything of a list was sent is still answered in
// the error shape; one after the status went out cuts the response, so the client
// sees a broken answer rather than a list that reads as whole.
func TestJSONListErrors(t *testing.T) {
	t.Parallel()
	item := map[string]string{"pad": strings.Repeat("x", 1000)}
	tests := []struct {
		name     string
		items    int  // added before the error
		fail     bool // the producer fails after them
		status   int
		readFail bool // reading the body fails
	}{
		{name: "whole", items: 10, status: http.StatusOK},
		{name: "streamed", items: 200, status: http.StatusOK},
		{name: "error before sending", items: 10, fail: true, status: http.StatusServiceUnavailable},
		{name: "error after sending", items: 200, fail: true, status: http.StatusOK, readFail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Server{log: slog.New(slog.DiscardHandler)}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				l := newJSONList(w, "items")
				for range tc.items {
					if err := l.add(item); err != nil {
						_ = s.listFailed(r, l, err)
						return
					}
				}
				if tc.fail {
					if err := s.listFailed(r, l, errors.New("storage failed")); err != nil {
						writeAPIError(w, toAPIError(fmt.Errorf("%w: %w", actor.ErrUnavailable, err)))
					}
					return
				}
				l.end()
			}))
			defer hs.Close()
			resp, err := hs.Client().Get(hs.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || (err != nil) != tc.readFail {
				t.Fatalf("status %d, read error %v; want %d, read error %v", resp.StatusCode, err, tc.status, tc.readFail)
			}
			if tc.readFail || tc.fail {
				return
			}
			var got struct {
				Items []map[string]string `json:"items"`
			}
			if err := json.Unmarshal(body, &got); err != nil || len(got.Items) != tc.items {
				t.Fatalf("decoded %d items (%v), want %d", len(got.Items), err, tc.items)
			}
		})
	}
}

// TestListDirStreamed: a directory of up to dirSortLimit entries is listed sorted by
// name and sent whole; a larger one is sent as it is read (chunked), every entry once.
func TestListDirStreamed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "ld"})
	ws := ts.hostWorkspace("ld")
	var big []string
	for i := range dirSortLimit + 50 {
		big = append(big, fmt.Sprintf("f%05d", i))
	}
	for dir, names := range map[string][]string{"small": {"c", "a", "b"}, "big": big} {
		if err := os.MkdirAll(filepath.Join(ws, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(ws, dir, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name, dir string
		want      []string
		sorted    bool // listed in name order, and sent whole
	}{
		{name: "small", dir: "small", want: []string{"a", "b", "c"}, sorted: true},
		{name: "big", dir: "big", want: big},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/ld/files?path="+tc.dir, nil)
			if whole := r.header.Get("Content-Length") != ""; whole != tc.sorted {
				t.Fatalf("sent with a Content-Length: %v, want %v (%d bytes)", whole, tc.sorted, len(r.body))
			}
			var list struct {
				Entries []dirEntryJSON `json:"entries"`
			}
			r.json(t, &list)
			var got []string
			for _, e := range list.Entries {
				if e.Type != "file" || e.Mode != "0644" {
					t.Fatalf("entry %+v", e)
				}
				got = append(got, e.Name)
			}
			if !tc.sorted {
				slices.Sort(got) // the filesystem's order
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("listed %d entries, want %d, each once", len(got), len(tc.want))
			}
		})
	}
}

// TestSandboxListsStreamed: the processes and sessions lists of a sandbox go out as
// they are encoded once over listFlushBytes (chunked), with every item.
func TestSandboxListsStreamed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "ls"})
	pad := strings.Repeat("x", 5000)
	const count = 16 // 80 KB of commands or env
	for i := range count {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ls/processes", map[string]any{"command": "true #" + pad})
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ls/sessions", map[string]any{"id": fmt.Sprintf("s%02d", i), "env": map[string]string{"PAD": pad}})
	}
	for _, name := range []string{"processes", "sessions"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/ls/"+name, nil)
			if r.header.Get("Content-Length") != "" {
				t.Fatalf("%d bytes sent with a Content-Length, want chunked", len(r.body))
			}
			var list map[string][]map[string]any
			r.json(t, &list)
			if len(list[name]) != count {
				t.Fatalf("%d %s listed, want %d", len(list[name]), name, count)
			}
		})
	}
}
