package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// nsinitPkg is the package whose initialisation turns a re-executed sandgate into a
// sandbox's init: the packages initialised before it run in every init, the rest never
// do (its init function does not return there).
const nsinitPkg = "github.com/sandgate/sandgate/runtime/internal/nsinit"

// ourPrefix is the import path prefix of our own packages.
const ourPrefix = "github.com/sandgate/sandgate/"

// pkgInit is one line of GODEBUG=inittrace=1: a package's initialisation, in order.
type pkgInit struct {
	pkg    string
	bytes  int
	allocs int
}

// initTrace runs bin with GODEBUG=inittrace=1 and the environment a sandbox's init gets
// (nothing of ours but GOMAXPROCS), and returns its packages' initialisations in the
// order they ran.
func initTrace(tb testing.TB, bin string) []pkgInit {
	tb.Helper()
	cmd := exec.Command(bin, "version")
	cmd.Env = []string{"GODEBUG=inittrace=1", "GOMAXPROCS=3"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s version: %v\n%s", bin, err, stderr.String())
	}
	var out []pkgInit
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <pkg> @<t> ms, <t> ms clock, <n> bytes, <n> allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			tb.Fatalf("unreadable inittrace line %q", sc.Text())
		}
		out = append(out, pkgInit{pkg: f[1], bytes: b, allocs: a})
	}
	return out
}

// TestPackageInitAllocations bounds what package initialisation allocates in the
// sandgate binary, read from GODEBUG=inittrace=1 of the built binary. Initialisation
// allocations are mostly live for good and spread over many size classes, so each one
// touches heap pages (and, once the runtime collects, its metadata) in every process:
//
//   - before nsinit: what every sandbox's init runs before the init takes over. It is
//     the standard library's and third-party packages' only (encoding/gob through
//     raft's msgpack codec, runtime/metrics, prometheus' protobuf descriptors, unicode's
//     tables for regexp, wazero's, ...), about 138 KB in 1,044 allocations with Go
//     1.26; a program that links nsinit alone allocates 19 KB in 131. Measured on a
//     real serve, the difference is a median 288 KiB of an init's private memory when
//     fresh and 612 KiB once quiet after bursts of execs (BENCHMARKS.md, "#14, ninth
//     pass"). A new import whose package initialises before nsinit raises it;
//   - ours before nsinit: nothing. Package order is by import path among packages
//     whose imports are initialised, so a package of ours that sorts before nsinit and
//     needs only packages ready early would run in every init;
//   - ours in all: a regexp or a map literal at package level costs every CLI run and
//     serve; compile or build it at first use instead (sync.Once, a switch, an array);
//   - everything: what serve and every CLI run pay, about 384 KB in 2,717 allocations.
//
// The bounds are the figures measured with Go 1.26.8, plus about 15%. A new Go release
// may move the standard library's share: read the trace (GODEBUG=inittrace=1
// ./sandgate version) and set them again from it.
func TestPackageInitAllocations(t *testing.T) {
	t.Parallel()
	trace := initTrace(t, buildBinary(t))
	nsinitAt := -1
	for i, p := range trace {
		if p.pkg == nsinitPkg {
			nsinitAt = i
		}
	}
	if len(trace) < 50 || nsinitAt < 0 {
		t.Fatalf("inittrace lists %d packages and nsinit at %d: the format changed?", len(trace), nsinitAt)
	}
	type sum struct{ bytes, allocs int }
	add := func(s *sum, p pkgInit) { s.bytes += p.bytes; s.allocs += p.allocs }
	var before, all, ours, oursBefore sum
	var oursBeforeNames []string
	for i, p := range trace {
		add(&all, p)
		if i < nsinitAt {
			add(&before, p)
		}
		if strings.HasPrefix(p.pkg, ourPrefix) {
			add(&ours, p)
			if i < nsinitAt && p.allocs > 0 {
				add(&oursBefore, p)
				oursBeforeNames = append(oursBeforeNames, p.pkg)
			}
		}
	}
	tests := []struct {
		name      string
		got       sum
		maxBytes  int
		maxAllocs int
	}{
		{name: "before nsinit", got: before, maxBytes: 160_000, maxAllocs: 1_200},
		{name: "ours before nsinit", got: oursBefore, maxBytes: 0, maxAllocs: 0},
		{name: "ours", got: ours, maxBytes: 2_048, maxAllocs: 16},
		{name: "all", got: all, maxBytes: 440_000, maxAllocs: 3_100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Logf("%d bytes in %d allocations", tt.got.bytes, tt.got.allocs)
			if tt.got.bytes > tt.maxBytes || tt.got.allocs > tt.maxAllocs {
				t.Errorf("package initialisation allocates %d bytes in %d allocations, over the bound of %d bytes in %d (ours before nsinit: %v); see GODEBUG=inittrace=1 of the binary",
					tt.got.bytes, tt.got.allocs, tt.maxBytes, tt.maxAllocs, oursBeforeNames)
			}
		})
	}
}
