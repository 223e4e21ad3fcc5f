package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// buildVersion is what the binary knows of its own build.
type buildVersion struct {
	module   string // module version: v1.2.3 for `go install …@v1.2.3`, (devel) in a checkout
	revision string // vcs.revision, when built in a checkout
	time     string // vcs.time
	modified bool   // vcs.modified: built from a tree with uncommitted changes
	goVer    string
}

// version reads the build information Go embeds in every binary.
func version() buildVersion {
	v := buildVersion{module: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.goVer = bi.GoVersion
	if bi.Main.Version != "" {
		v.module = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// short is the version for a User-Agent: the module version, or the revision's first
// 12 characters for a build from a checkout.
func (v buildVersion) short() string {
	if (v.module == "(devel)" || v.module == "(unknown)") && v.revision != "" {
		return v.revision[:min(12, len(v.revision))]
	}
	return v.module
}

// print writes the version lines of `sandgate --version`.
func (v buildVersion) print(w io.Writer) {
	fmt.Fprintf(w, "sandgate %s\n", v.module)
	if v.revision != "" {
		mod := ""
		if v.modified {
			mod = " (modified)"
		}
		fmt.Fprintf(w, "revision %s%s\n", v.revision, mod)
	}
	if v.time != "" {
		fmt.Fprintf(w, "built from a commit of %s\n", v.time)
	}
	if v.goVer != "" {
		fmt.Fprintf(w, "go %s\n", v.goVer)
	}
}

// cmdVersion prints the version; it takes no arguments.
func cmdVersion(e *env, args []string) int {
	f := newLocalFlags("version", `

Prints the version of this binary: the module version (set by go install …@VERSION),
the commit it was built from and the Go version.`)
	if _, code, ok := f.parse(e, args, 0, 0); !ok {
		return code
	}
	version().print(e.stdout)
	return 0
}
