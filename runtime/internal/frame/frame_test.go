package frame

import (
	"errors"
	"maps"
	"os/exec"
	"strings"
	"testing"
)

const testNonce = "0123456789abcdef0123456789abcdef"

func frameText(nonce, status, pwd, exports string) string {
	return Prefix + nonce + " " + status + "\n" + pwd + "\x00" + exports + Prefix + nonce + ":end\n"
}

var parseTests = []struct {
	name    string
	in      string
	nonce   string
	want    Frame
	wantN   int // -1: len(in)
	wantErr error
}{
	{
		name:  "simple",
		in:    frameText(testNonce, "0", "/w\n", "declare -x A=\"1\"\n"),
		nonce: testNonce,
		want:  Frame{Status: 0, Cwd: "/w", Env: map[string]string{"A": "1"}},
		wantN: -1,
	},
	{
		name:  "junk before and after",
		in:    "junk\nsandgate:deadbeef 0\n" + frameText(testNonce, "42", "/a b\n", "") + "more",
		nonce: testNonce,
		want:  Frame{Status: 42, Cwd: "/a b", Env: map[string]string{}},
		wantN: len("junk\nsandgate:deadbeef 0\n" + frameText(testNonce, "42", "/a b\n", "")),
	},
	{
		name:  "pwd failed",
		in:    frameText(testNonce, "1", "", "declare -x OLDPWD\n"),
		nonce: testNonce,
		want:  Frame{Status: 1, Cwd: "", Env: map[string]string{}},
		wantN: -1,
	},
	{
		name:  "cwd with newline",
		in:    frameText(testNonce, "0", "/x\ny\n", ""),
		nonce: testNonce,
		want:  Frame{Cwd: "/x\ny", Env: map[string]string{}},
		wantN: -1,
	},
	{
		name:    "other nonce only",
		in:      frameText("ffff", "0", "/\n", ""),
		nonce:   testNonce,
		wantErr: ErrIncomplete,
	},
	{
		name:    "no end yet",
		in:      Prefix + testNonce + " 0\n/\n\x00declare -x A=\"1\"\n",
		nonce:   testNonce,
		wantErr: ErrIncomplete,
	},
	{
		name:    "bad status",
		in:      frameText(testNonce, "x", "/\n", ""),
		nonce:   testNonce,
		wantErr: ErrMalformed,
	},
	{
		name:    "status too big",
		in:      frameText(testNonce, "256", "/\n", ""),
		nonce:   testNonce,
		wantErr: ErrMalformed,
	},
	{
		name:    "no nul",
		in:      Prefix + testNonce + " 0\n/\n" + Prefix + testNonce + ":end\n",
		nonce:   testNonce,
		wantErr: ErrMalformed,
	},
	{
		name:    "empty nonce",
		in:      frameText("", "0", "/\n", ""),
		nonce:   "",
		wantErr: ErrMalformed,
	},
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, n, err := Parse([]byte(tt.in), tt.nonce)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			wantN := tt.wantN
			if wantN < 0 {
				wantN = len(tt.in)
			}
			if n != wantN {
				t.Errorf("consumed = %d, want %d", n, wantN)
			}
			if got.Status != tt.want.Status || got.Cwd != tt.want.Cwd || !maps.Equal(got.Env, tt.want.Env) {
				t.Errorf("frame = %+v, want %+v", got, tt.want)
			}
		})
	}
}

var exportTests = []struct {
	name    string
	in      string
	want    map[string]string
	wantErr bool
}{
	{name: "double quoted escapes", in: "declare -x A=\"q\\\"\\$\\`\\\\z!x\"\n", want: map[string]string{"A": "q\"$`\\z!x"}},
	{name: "empty value", in: "declare -x C=\"\"\n", want: map[string]string{"C": ""}},
	{name: "no value skipped", in: "declare -x D\n", want: map[string]string{}},
	{name: "array skipped", in: "declare -ax ARR=([0]=\"1\" [1]=\"2\")\n", want: map[string]string{}},
	{name: "readonly kept", in: "declare -rx R=\"v\"\n", want: map[string]string{"R": "v"}},
	{name: "ansi octal", in: "declare -x B=$'\\001\\002\\303\\251\\377'\n", want: map[string]string{"B": "\x01\x02é\xff"}},
	{name: "ansi escapes", in: "declare -x E=$'a\\tb\\nc\\rd\\\\e\\'f\\\"g\\x41\\u00e9\\cA\\E'\n", want: map[string]string{"E": "a\tb\nc\rd\\e'f\"gAé\x01\x1b"}},
	{name: "utf8 literal", in: "declare -x U=$'é\\377x'\n", want: map[string]string{"U": "é\xffx"}},
	{name: "posix mode", in: "export A=$'x\\ny'\nexport -a ARR=([0]=\"1\")\nexport D\n", want: map[string]string{"A": "x\ny"}},
	{name: "several", in: "declare -x A=\"1\"\ndeclare -x B=\"2\"\n", want: map[string]string{"A": "1", "B": "2"}},
	{name: "garbage line", in: "hello\n", wantErr: true},
	{name: "bad name", in: "declare -x 1A=\"1\"\n", wantErr: true},
	{name: "unterminated", in: "declare -x A=\"1\n", wantErr: true},
	{name: "trailing after quote", in: "declare -x A=\"1\"x\n", wantErr: true},
	{name: "unquoted", in: "declare -x A=1\n", wantErr: true},
	{name: "dangling c", in: "declare -x A=$'\\c", wantErr: true},
}

func TestParseExports(t *testing.T) {
	t.Parallel()
	for _, tt := range exportTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseExports([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseExportsBash checks the parser against what a real bash prints.
func TestParseExportsBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	var all []byte
	for i := 1; i < 256; i++ {
		all = append(all, byte(i))
	}
	want := map[string]string{
		"ALL":    string(all),
		"QUOTES": `"'$` + "`\\!",
		"NL":     "a\nb\n",
		"EMPTY":  "",
		"UTF":    "héllo wörld ✓",
		"BAD":    "\xff\xfe\xc3",
	}
	for _, locale := range []string{"C", "C.UTF-8"} {
		env := []string{"LANG=" + locale, "LC_ALL=" + locale}
		for k, v := range want {
			env = append(env, k+"="+v)
		}
		for _, script := range []string{"export -p", "set -o posix; export -p"} {
			cmd := exec.Command(bash, "--noprofile", "--norc", "-c", script)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			got, err := ParseExports(out)
			if err != nil {
				t.Fatalf("%s %q: %v\n%s", locale, script, err, out)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s %q: %s = %q, want %q", locale, script, k, got[k], v)
				}
			}
		}
	}
}

// ansiQuote writes v the way bash's $'…' does for non-printable bytes.
func ansiQuote(v string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("'")
	return b.String()
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in), tt.nonce)
	}
	f.Fuzz(func(t *testing.T, in []byte, nonce string) {
		fr, n, err := Parse(in, nonce)
		if err != nil {
			if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if n <= 0 || n > len(in) {
			t.Fatalf("consumed %d of %d", n, len(in))
		}
		if fr.Status < 0 || fr.Status > 255 {
			t.Fatalf("status %d", fr.Status)
		}
		// A frame is never found without its own end marker right at the cut.
		if !strings.HasSuffix(string(in[:n]), Prefix+nonce+":end\n") {
			t.Fatalf("cut %q does not end with the end marker", in[:n])
		}
		// Its head reads the same by itself, as a session that cannot hold the whole
		// frame reads it.
		status, cwd, hn, err := ParseHead(in, nonce)
		if err != nil || status != fr.Status || cwd != fr.Cwd || hn <= 0 || hn > n {
			t.Fatalf("ParseHead = %d %q %d %v; Parse = %d %q %d", status, cwd, hn, err, fr.Status, fr.Cwd, n)
		}
	})
}

func FuzzParseHead(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in), tt.nonce)
	}
	f.Fuzz(func(t *testing.T, in []byte, nonce string) {
		status, _, n, err := ParseHead(in, nonce)
		if err != nil {
			if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if n <= 0 || n > len(in) || in[n-1] != 0 || status < 0 || status > 255 {
			t.Fatalf("ParseHead = status %d, n %d of %d", status, n, len(in))
		}
	})
}

func FuzzParseExports(f *testing.F) {
	for _, tt := range exportTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		env, err := ParseExports([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error kind: %v", err)
			}
		}
		for k := range env {
			if !ValidName(k) {
				t.Fatalf("invalid name %q accepted", k)
			}
		}
		// Any value quoted the way bash quotes it reads back unchanged.
		line := "declare -x V=" + ansiQuote(in) + "\n"
		got, err := ParseExports([]byte(line))
		if err != nil || got["V"] != in {
			t.Fatalf("round trip of %q: got %q, %v", in, got["V"], err)
		}
	})
}

func TestParseHead(t *testing.T) {
	t.Parallel()
	head := Prefix + testNonce + " "
	tests := []struct {
		name       string
		in         string
		wantStatus int
		wantCwd    string
		wantN      int // of len(in) when -1
		wantErr    error
	}{
		{name: "whole frame", in: frameText(testNonce, "7", "/w\n", "declare -x A=\"1\"\n"), wantStatus: 7, wantCwd: "/w", wantN: len(head + "7\n/w\n\x00")},
		{name: "listing not yet", in: "junk" + head + "0\n/a b\n\x00declare -x A=\"", wantCwd: "/a b", wantN: len("junk" + head + "0\n/a b\n\x00")},
		{name: "pwd failed", in: head + "1\n\x00", wantStatus: 1, wantN: -1},
		{name: "no status line yet", in: head + "0", wantErr: ErrIncomplete},
		{name: "no cwd end yet", in: head + "0\n/w\n", wantErr: ErrIncomplete},
		{name: "other nonce", in: frameText("ffff", "0", "/\n", ""), wantErr: ErrIncomplete},
		{name: "bad status", in: head + "x\n/\n\x00", wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, cwd, n, err := ParseHead([]byte(tt.in), testNonce)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			wantN := tt.wantN
			if wantN < 0 {
				wantN = len(tt.in)
			}
			if status != tt.wantStatus || cwd != tt.wantCwd || n != wantN {
				t.Errorf("ParseHead = %d, %q, %d; want %d, %q, %d", status, cwd, n, tt.wantStatus, tt.wantCwd, wantN)
			}
		})
	}
}
