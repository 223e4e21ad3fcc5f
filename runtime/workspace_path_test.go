package runtime

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

var wsResolveTests = []struct {
	name    string
	in      string
	want    string
	wantErr error
}{
	{name: "empty is root", in: "", want: "."},
	{name: "dot", in: ".", want: "."},
	{name: "relative", in: "a/b.txt", want: "a/b.txt"},
	{name: "cleaned", in: "a//b/./c/", want: "a/b/c"},
	{name: "inner dotdot", in: "a/../b", want: "b"},
	{name: "absolute in workspace", in: "/w/ws/a/b", want: "a/b"},
	{name: "absolute workspace", in: "/w/ws", want: "."},
	{name: "absolute workspace slash", in: "/w/ws/", want: "."},
	{name: "absolute other spelling", in: "/real/ws/x", want: "x"},
	{name: "dotdot", in: "..", wantErr: ErrEscapes},
	{name: "dotdot prefix", in: "../ws/x", wantErr: ErrEscapes},
	{name: "dotdot after", in: "a/../../x", wantErr: ErrEscapes},
	{name: "absolute outside", in: "/etc/passwd", wantErr: ErrEscapes},
	{name: "absolute root", in: "/", wantErr: ErrEscapes},
	{name: "sibling with same prefix", in: "/w/wsx/a", wantErr: ErrEscapes},
	{name: "absolute dotdot out", in: "/w/ws/../other", wantErr: ErrEscapes},
	{name: "absolute dotdot in", in: "/w/other/../ws/a", want: "a"},
	{name: "nul", in: "a\x00b", wantErr: ErrInvalid},
}

var wsTestPrefixes = []string{"/w/ws", "/real/ws"}

func TestWorkspaceResolve(t *testing.T) {
	t.Parallel()
	for _, tt := range wsResolveTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := wsResolve(wsTestPrefixes, tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("wsResolve(%q) = %q, %v; want %v", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("wsResolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func FuzzWorkspaceResolve(f *testing.F) {
	for _, tt := range wsResolveTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := wsResolve(wsTestPrefixes, in)
		if err != nil {
			if !errors.Is(err, ErrEscapes) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if got != "." && !filepath.IsLocal(got) {
			t.Fatalf("wsResolve(%q) = %q: not local", in, got)
		}
		if got != filepath.Clean(got) || strings.Contains(got, "..") && !filepath.IsLocal(got) {
			t.Fatalf("wsResolve(%q) = %q: not clean", in, got)
		}
		// Joined to the workspace, the result stays inside it.
		full := filepath.Join("/w/ws", got)
		if full != "/w/ws" && !strings.HasPrefix(full, "/w/ws/") {
			t.Fatalf("wsResolve(%q) = %q: joins to %q", in, got, full)
		}
		// A relative input that is already local resolves to its clean self.
		if !filepath.IsAbs(in) && in != "" && filepath.IsLocal(in) && got != filepath.Clean(in) {
			t.Fatalf("wsResolve(%q) = %q, want %q", in, got, filepath.Clean(in))
		}
	})
}
