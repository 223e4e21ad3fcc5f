package gateway

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// toolsDir is tools/ of the repository: the pinned npm tools (package.json and
// package-lock.json, installed by `make tools`) and the Go tools module (tools/go).
func toolsDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "tools"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// npmTool returns the path of an installed npm tool of tools/; its absence fails the
// test with what to run: generated clients are tested with the real generators, never
// skipped.
func npmTool(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(toolsDir(t), "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed (%v): run `make tools` (npm ci in tools/), as make test does", name, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): %s needs it", err, name)
	}
	return bin
}

// run runs a command in dir with extra environment, bounded, and fails the test with
// its output when it does not succeed.
func run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestGeneratedClients generates a Go client (oapi-codegen, pinned in tools/go/go.mod)
// and a TypeScript one (openapi-typescript + openapi-fetch, pinned in tools/) from the
// served OpenAPI document, unmodified and with no generator flags beyond the output,
// builds each (tsc --strict) and drives a tour through it against a real server.
func TestGeneratedClients(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	// The document as a generator fetches it: from the server, without a token.
	resp, err := ts.client.Get(ts.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json without a token: %d %v", resp.StatusCode, err)
	}
	docPath := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(docPath, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(sb string) []string {
		return []string{"SANDGATE_URL=" + ts.url, "SANDGATE_TOKEN=" + testToken, "SANDGATE_SANDBOX=" + sb}
	}

	t.Run("go", func(t *testing.T) {
		t.Parallel()
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Fatalf("go is not on PATH (%v): the Go client is generated and built with it", err)
		}
		toolsGo := filepath.Join(toolsDir(t), "go")
		mod := t.TempDir()
		if err := os.Mkdir(filepath.Join(mod, "sgclient"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, toolsGo, nil, goBin, "tool", "oapi-codegen", "-generate", "types,client", "-package", "sgclient",
			"-o", filepath.Join(mod, "sgclient", "client.go"), docPath)
		// The driver's module requires what tools/go pins (the generated code's runtime
		// library among it), so it builds with the same versions, checked by go.sum.
		goMod, err := os.ReadFile(filepath.Join(toolsGo, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		goMod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(goMod, []byte("module sgtour"))
		goSum, err := os.ReadFile(filepath.Join(toolsGo, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"go.mod": goMod, "go.sum": goSum, "main.go": []byte(goTourDriver)} {
			if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bin := filepath.Join(mod, "tour")
		run(t, mod, []string{"GOFLAGS=-mod=readonly", "GOWORK=off"}, goBin, "build", "-o", bin, ".")
		if out := run(t, mod, env("gen-go"), bin); !strings.Contains(out, "tour ok") {
			t.Fatalf("go tour printed %q", out)
		}
	})

	t.Run("typescript", func(t *testing.T) {
		t.Parallel()
		gen, tsc := npmTool(t, "openapi-typescript"), npmTool(t, "tsc")
		dir := t.TempDir()
		run(t, dir, nil, gen, docPath, "-o", filepath.Join(dir, "api.ts"))
		// openapi-fetch (and tsc's view of it) come from tools/node_modules.
		if err := os.Symlink(filepath.Join(toolsDir(t), "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"tour.ts": tsTourDriver, "package.json": `{"type": "module", "private": true}` + "\n"}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// tsc fails on any type error (it still writes the output, which is then not run).
		run(t, dir, nil, tsc, "--strict", "--target", "es2022", "--module", "nodenext",
			"--moduleResolution", "nodenext", "--types", "node", "--outDir", "out", "api.ts", "tour.ts")
		if out := run(t, dir, env("gen-ts"), "node", filepath.Join(dir, "out", "tour.js")); !strings.Contains(out, "tour ok") {
			t.Fatalf("typescript tour printed %q", out)
		}
	})
}
