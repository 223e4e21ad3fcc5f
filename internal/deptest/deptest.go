// Package deptest checks a package's imports against a list of forbidden ones, so the
// import direction of the codebase is enforced by a test. It is imported by tests only.
package deptest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Rules lists what a package may not depend on.
type Rules struct {
	// Forbidden are import paths (or path prefixes ending in "/") that must not appear
	// anywhere in the package's non-test dependency graph, with the reason.
	Forbidden map[string]string
	// ForbiddenDirect are import paths the package must not import directly; they may
	// still arrive through a dependency.
	ForbiddenDirect map[string]string
}

// Check fails tb when the package at pkg (an import path or "." ) breaks rules.
func Check(tb testing.TB, pkg string, rules Rules) {
	tb.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", pkg).Output()
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
}

// Ours is the module path, for building rules about our own packages.
const Ours = "github.com/sandgate/sandgate/"
