package runtime

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestWorkspaceOpenDir reads directories in batches of every size: each entry comes
// once, described as ReadDir describes it, then io.EOF; paths are held to ReadDir's
// rules.
func TestWorkspaceOpenDir(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	want, err := w.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, len(want), 100} {
		d, err := w.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []DirEntry
		for {
			batch, err := d.Next(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(batch) > n {
				t.Fatalf("batch of %d entries, asked for %d", len(batch), n)
			}
			got = append(got, batch...)
		}
		if _, err := d.Next(n); !errors.Is(err, io.EOF) {
			t.Fatalf("Next after the end = %v, want io.EOF", err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
		if !slices.EqualFunc(got, want, func(a, b DirEntry) bool {
			return a.Name == b.Name && a.Type == b.Type && a.Size == b.Size && a.Mode == b.Mode && a.ModTime.Equal(b.ModTime)
		}) {
			t.Fatalf("batches of %d: %+v\nwant %+v", n, got, want)
		}
	}

	tests := []struct {
		name, path string
		want       error
	}{
		{name: "file", path: "a.txt", want: ErrNotDir},
		{name: "missing", path: "nope", want: fs.ErrNotExist},
		{name: "escaping link", path: "out", want: ErrEscapes},
		{name: "dotdot", path: "../outside", want: ErrEscapes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := w.OpenDir(tc.path)
			if err == nil {
				d.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("OpenDir(%q) = %v, want %v", tc.path, err, tc.want)
			}
		})
	}
	d, err := w.OpenDir("insub") // a link to a directory inside is followed
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if ents, err := d.Next(10); err != nil || len(ents) != 2 {
		t.Fatalf("through a link: %+v, %v", ents, err)
	}
}
