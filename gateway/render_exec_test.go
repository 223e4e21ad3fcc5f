package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

var appendExecTests = []struct {
	name string
	r    runtime.ExecResult
}{
	{"empty", runtime.ExecResult{Stdout: []byte{}, Stderr: []byte{}}},
	{"nil output", runtime.ExecResult{}},
	{"plain", runtime.ExecResult{ExitCode: 3, Stdout: []byte("hello\n"), Stderr: []byte("err"), Duration: 1500 * time.Microsecond}},
	{"escapes", runtime.ExecResult{Stdout: []byte("a\"b\\c\td\x01<&>"), Stderr: []byte("\r\n\b\f")}},
	{"utf-8 and separators", runtime.ExecResult{Stdout: []byte("é日本\u2028\u2029"), Stderr: []byte("\u007f")}},
	{"negative exit, flags", runtime.ExecResult{ExitCode: -1, TimedOut: true, Truncated: true, Duration: time.Hour}},
	{"invalid utf-8", runtime.ExecResult{Stdout: []byte("\xff\xfe"), Stderr: []byte("ok")}},
}

// checkAppendExec fails unless writeExec writes what writeJSON of renderExec writes.
func checkAppendExec(t *testing.T, r runtime.ExecResult) {
	t.Helper()
	got, want := httptest.NewRecorder(), httptest.NewRecorder()
	writeExec(got, r)
	writeJSON(want, 200, renderExec(r))
	if got.Code != want.Code || got.Body.String() != want.Body.String() {
		t.Fatalf("writeExec: %d %q\nwriteJSON: %d %q", got.Code, got.Body, want.Code, want.Body)
	}
	for _, k := range []string{"Content-Type", "Content-Length"} {
		if got.Header().Get(k) != want.Header().Get(k) {
			t.Fatalf("%s: %q, want %q", k, got.Header().Get(k), want.Header().Get(k))
		}
	}
}

// TestAppendExec: an exec's result is written as encoding/json writes it.
func TestAppendExec(t *testing.T) {
	t.Parallel()
	for _, tt := range appendExecTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkAppendExec(t, tt.r)
		})
	}
}

// FuzzAppendExec: any output, exit code and duration are written as encoding/json
// writes them.
func FuzzAppendExec(f *testing.F) {
	for _, tt := range appendExecTests {
		f.Add(tt.r.ExitCode, tt.r.Stdout, tt.r.Stderr, int64(tt.r.Duration), tt.r.TimedOut, tt.r.Truncated)
	}
	f.Fuzz(func(t *testing.T, code int, stdout, stderr []byte, d int64, timedOut, truncated bool) {
		checkAppendExec(t, runtime.ExecResult{ExitCode: code, Stdout: stdout, Stderr: stderr, Duration: time.Duration(d), TimedOut: timedOut, Truncated: truncated})
	})
}

// TestWriteExecAllocs: the common result is written without encoding/json. Not
// parallel: AllocsPerRun refuses to run beside other tests.
func TestWriteExecAllocs(t *testing.T) {
	r := runtime.ExecResult{Stdout: []byte("out\n"), Stderr: []byte{}, Duration: time.Millisecond}
	w := httptest.NewRecorder()
	fast := testing.AllocsPerRun(20, func() { w.Body.Reset(); writeExec(w, r) })
	slow := testing.AllocsPerRun(20, func() { w.Body.Reset(); writeJSON(w, 200, renderExec(r)) })
	if fast >= slow {
		t.Fatalf("writeExec made %v allocations, writeJSON %v", fast, slow)
	}
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWriteExec: an exec's usual result (a line of output) written both ways.
func BenchmarkWriteExec(b *testing.B) {
	r := runtime.ExecResult{Stdout: []byte("hello from the sandbox\n"), Stderr: []byte{}, Duration: 2 * time.Millisecond}
	for _, bb := range []struct {
		name  string
		write func(*httptest.ResponseRecorder)
	}{
		{"encoding-json", func(w *httptest.ResponseRecorder) { writeJSON(w, 200, renderExec(r)) }},
		{"append", func(w *httptest.ResponseRecorder) { writeExec(w, r) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			w := httptest.NewRecorder()
			for b.Loop() {
				w.Body.Reset()
				bb.write(w)
			}
		})
	}
}
