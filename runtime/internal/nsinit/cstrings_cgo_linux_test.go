//go:build linux && cgo && amd64

package nsinit

import (
	"slices"
	"testing"
	"unsafe"
)

// TestCStrings checks the child's view of what cstrings lays out: each string
// NUL-terminated where its address points, each list's pointers to its strings in
// order and then NULL, all inside the two buffers made at start.
func TestCStrings(t *testing.T) {
	tests := []struct {
		name       string
		path, dir  string
		argv, envp []string
	}{
		{"exec", "/usr/bin/true", "/workspace", []string{"true"}, []string{"PATH=/usr/bin:/bin", "HOME=/workspace"}},
		{"empty strings and lists", "", "", []string{""}, nil},
		{"empty environment", "/bin/sh", "/", []string{"sh", "-c", "echo hi"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCStrings(tt.path, tt.dir, tt.argv, tt.envp)
			bufCap, ptrsCap := cap(b.buf), cap(b.ptrs)
			path, dir := b.add(tt.path), b.add(tt.dir)
			argv, envp := b.list(tt.argv), b.list(tt.envp)
			if cap(b.buf) != bufCap || cap(b.ptrs) != ptrsCap || len(b.buf) != cap(b.buf) || len(b.ptrs) != cap(b.ptrs) {
				t.Fatalf("buffers %d/%d and %d/%d: not made at their final size", len(b.buf), bufCap, len(b.ptrs), ptrsCap)
			}
			if got := cString(t, b, path); got != tt.path {
				t.Errorf("path %q, want %q", got, tt.path)
			}
			if got := cString(t, b, dir); got != tt.dir {
				t.Errorf("dir %q, want %q", got, tt.dir)
			}
			if got := cList(t, b, argv); !slices.Equal(got, tt.argv) {
				t.Errorf("argv %q, want %q", got, tt.argv)
			}
			if got := cList(t, b, envp); !slices.Equal(got, tt.envp) && !(len(got) == 0 && len(tt.envp) == 0) {
				t.Errorf("envp %q, want %q", got, tt.envp)
			}
		})
	}
}

// cString reads the NUL-terminated string at addr, as the child does, from b's
// buffer, which addr must point into.
func cString(t *testing.T, b *cstrings, addr uint64) string {
	t.Helper()
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.buf))))
	if addr < base || addr >= base+uint64(len(b.buf)) {
		t.Fatalf("address %#x outside the buffer [%#x, +%d)", addr, base, len(b.buf))
	}
	s := b.buf[addr-base:]
	end := slices.Index(s, 0)
	if end < 0 {
		t.Fatalf("no NUL after %#x", addr)
	}
	return string(s[:end])
}

// cList reads the NULL-terminated array of string pointers at addr, which must point
// into b's pointer buffer.
func cList(t *testing.T, b *cstrings, addr uint64) []string {
	t.Helper()
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.ptrs))))
	if addr < base || addr >= base+8*uint64(len(b.ptrs)) || (addr-base)%8 != 0 {
		t.Fatalf("address %#x outside the pointer buffer [%#x, +%d)", addr, base, len(b.ptrs))
	}
	var out []string
	for _, p := range b.ptrs[(addr-base)/8:] {
		if p == 0 {
			return out
		}
		out = append(out, cString(t, b, p))
	}
	t.Fatalf("no NULL after %#x", addr)
	return nil
}
