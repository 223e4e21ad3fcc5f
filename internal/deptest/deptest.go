// Package deptest checks a package's imports against a list of forbidden ones, so the
// import direction of the codebase is enforced by a test. It is imported by tests only.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Rules lists what a package may not depend on.
type Rules struct {
	// Forbidden are import paths (or path prefixes ending in "/") that must not appear
	// anywhere in the package's non-test dependency graph, with the reason.
	Forbidden map[string]string
	// ForbiddenDirect are import paths the package must not import directly; they may
	// still arrive through a dependency.
	ForbiddenDirect map[string]string
	// ForbiddenInOurs are import paths that none of our own packages in the graph (the
	// package itself included) may import directly. A third-party dependency may still
	// link them: raft's testing.go links "testing" into every user of raft.
	ForbiddenInOurs map[string]string
}

// Check fails tb when the package at pkg (an import path or "." ) breaks rules.
func Check(tb testing.TB, pkg string, rules Rules) {
	tb.Helper()
	out, err := goList("-json=ImportPath,Imports,Deps", pkg)
	if err != nil {
		tb.Fatalf("go list %s: %v", pkg, err)
	}
	var info struct {
		ImportPath string
		Imports    []string
		Deps       []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		tb.Fatalf("decode go list output: %v", err)
	}
	for _, dep := range info.Deps {
		for bad, why := range rules.Forbidden {
			if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) {
				tb.Errorf("%s depends on %s: %s", info.ImportPath, dep, why)
			}
		}
	}
	for _, imp := range info.Imports {
		if why, ok := rules.ForbiddenDirect[imp]; ok {
			tb.Errorf("%s imports %s: %s", info.ImportPath, imp, why)
		}
	}
	if len(rules.ForbiddenInOurs) > 0 {
		checkOurs(tb, pkg, rules.ForbiddenInOurs)
	}
}

// checkOurs fails tb when one of our packages in pkg's graph imports a path of bad.
func checkOurs(tb testing.TB, pkg string, bad map[string]string) {
	tb.Helper()
	out, err := goList("-deps", "-json=ImportPath,Imports,Module", pkg)
	if err != nil {
		tb.Fatalf("go list -deps %s: %v", pkg, err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return
		} else if err != nil {
			tb.Fatalf("decode go list output: %v", err)
		}
		if !strings.HasPrefix(p.ImportPath, Ours) {
			continue
		}
		for _, imp := range p.Imports {
			if why, ok := bad[imp]; ok {
				tb.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
	}
}

// Ours is the module path, for building rules about our own packages.
const Ours = "github.com/sandgate/sandgate/"

// goList runs go list with args. A failure is tried again twice: on a machine running
// many builds at once the go command can fail for reasons of its own (what it printed
// is in the error), and the import graph it reports does not change meanwhile.
func goList(args ...string) ([]byte, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var out []byte
		if out, err = exec.Command("go", append([]string{"list"}, args...)...).Output(); err == nil {
			return out, nil
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return nil, err
}
