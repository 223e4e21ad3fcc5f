package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLICp copies files and directories both ways through a real node, byte for
// byte, and checks where they land (docker cp's rules) and the errors.
func TestCLICp(t *testing.T) {
	n := startNode(t, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"cp1"}`)
	dir := t.TempDir()
	bin := make([]byte, 300<<10) // every byte value, NULs and invalid UTF-8 included
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range bin {
		bin[i] = byte(rng.UintN(256))
	}
	write := func(p string, b []byte, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "data.bin"), bin, 0o640)
	write(filepath.Join(dir, "tree", "a", "b.txt"), []byte("bee\n"), 0o644)
	write(filepath.Join(dir, "tree", "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "tree", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "into"), 0o755); err != nil {
		t.Fatal(err)
	}
	cp := func(args ...string) (string, string, int) {
		t.Helper()
		return n.run(t, cliToken, cliRun{args: append([]string{"cp"}, args...)})
	}
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := cp(args...)
		if code != 0 || errOut != "" {
			t.Fatalf("cp %v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	sameFile := func(p string, want []byte) {
		t.Helper()
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes (%v), want %d bytes, the same", p, len(got), err, len(want))
		}
	}
	remote := func(cmd string) string {
		t.Helper()
		out, errOut, code := n.run(t, cliToken, cliRun{args: []string{"exec", "cp1", "--", cmd}})
		if code != 0 {
			t.Fatalf("exec %q: %d %q", cmd, code, errOut)
		}
		return out
	}

	t.Run("file up and down", func(t *testing.T) {
		ok(filepath.Join(dir, "data.bin"), "cp1:bin/data.bin")
		ok("cp1:bin/data.bin", filepath.Join(dir, "back.bin"))
		sameFile(filepath.Join(dir, "back.bin"), bin)
		if got := ok("cp1:bin/data.bin", "-"); got != string(bin) {
			t.Fatalf("to stdout: %d bytes, want %d", len(got), len(bin))
		}
		if got := remote("stat -c %a bin/data.bin"); got != "640\n" {
			t.Fatalf("mode in the sandbox %q, want 640", got)
		}
	})
	t.Run("into directories", func(t *testing.T) {
		ok(filepath.Join(dir, "data.bin"), "cp1:bin/") // an existing directory, by its slash
		ok(filepath.Join(dir, "data.bin"), "cp1:bin")  // and without it
		if got := remote("ls bin"); got != "data.bin\n" {
			t.Fatalf("bin holds %q", got)
		}
		ok("cp1:bin/data.bin", filepath.Join(dir, "into"))
		sameFile(filepath.Join(dir, "into", "data.bin"), bin)
	})
	t.Run("directory up and down", func(t *testing.T) {
		ok(filepath.Join(dir, "tree"), "cp1:copied")
		if got := remote("cd copied && find . | sort && ./run.sh"); got != ".\n./a\n./a/b.txt\n./empty\n./run.sh\nran\n" {
			t.Fatalf("copied tree %q", got)
		}
		ok("cp1:copied", filepath.Join(dir, "down"))
		sameFile(filepath.Join(dir, "down", "a", "b.txt"), []byte("bee\n"))
		sameFile(filepath.Join(dir, "down", "run.sh"), []byte("#!/bin/sh\necho ran\n"))
		if st, err := os.Stat(filepath.Join(dir, "down", "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("run.sh mode: %v %v", st, err)
		}
		if st, err := os.Stat(filepath.Join(dir, "down", "empty")); err != nil || !st.IsDir() {
			t.Fatalf("empty directory: %v", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name   string
			args   []string
			stderr string
		}{
			{"both local", []string{filepath.Join(dir, "data.bin"), filepath.Join(dir, "x")}, "exactly one of SRC and DEST"},
			{"both remote", []string{"cp1:a", "cp1:b"}, "exactly one of SRC and DEST"},
			{"one argument", []string{"cp1:a"}, "wrong number of arguments"},
			{"remote missing", []string{"cp1:nope", filepath.Join(dir, "x")}, "not_found"},
			{"sandbox missing", []string{"nope:a", filepath.Join(dir, "x")}, "not_found"},
			{"local missing", []string{filepath.Join(dir, "nope"), "cp1:x"}, "failed to read"},
			{"outside the workspace", []string{filepath.Join(dir, "data.bin"), "cp1:../escape"}, "invalid_argument"},
			{"directory to stdout", []string{"cp1:copied", "-"}, "is a directory"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := cp(tt.args...)
				if code != 125 || out != "" || !strings.Contains(errOut, tt.stderr) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 125 and %q", code, out, errOut, tt.stderr)
				}
			})
		}
	})
}
