package runtime

import (
	"strings"
)

// sessInitScript is written to a session shell's stdin once, before any command. It
// defines the read-only helpers that every command line calls:
//
//   - __sg_f STATUS NONCE [r] writes the control frame (see runtime/internal/frame) to
//     fd 3, after undoing a per-call cwd/env when r is given.
//   - __sg_pre CWD [NAME VALUE]... applies a per-call cwd and env, saving what it changes.
//   - __sg_post restores what __sg_pre saved.
//
// Every builtin is called through `builtin` so user functions named printf, export, cd
// or pwd cannot break framing, and the helpers are readonly so they cannot be redefined
// or unset. __sg_d is the session's private directory holding the command file and the
// per-command FIFOs. The helpers' locals are __sg_ prefixed so they never shadow a user
// variable of the same name.
const sessInitScript = `shopt -s expand_aliases
__sg_f() {
  local __sg_s=$1
  if [[ -n ${3-} ]]; then __sg_post; fi
  {
    builtin printf '\nsandgate:%s %s\n' "$2" "$__sg_s"
    builtin pwd
    builtin printf '\0'
    builtin export -p
    builtin printf '\nsandgate:%s:end\n' "$2"
  } >&3 2>/dev/null
}
__sg_pre() {
  __sg_sv=()
  __sg_cd=$1 __sg_opwd=$PWD __sg_ool=${OLDPWD-} __sg_hadol=${OLDPWD+1}
  shift
  while (($#)); do
    if [[ -v $1 ]]; then
      __sg_sv+=("$1" 1 "${!1}" "${!1@a}")
    else
      __sg_sv+=("$1" 0 "" "")
    fi
    builtin export "$1=$2" || return 1
    shift 2
  done
  if [[ -n $__sg_cd ]]; then
    builtin cd -- "$__sg_cd" 2>/dev/null || {
      builtin printf 'sandgate: cannot change to cwd %s\n' "$__sg_cd" >&2
      return 1
    }
  fi
}
__sg_post() {
  local __sg_i
  for ((__sg_i=0; __sg_i<${#__sg_sv[@]}; __sg_i+=4)); do
    if [[ ${__sg_sv[__sg_i+1]} == 1 ]]; then
      builtin printf -v "${__sg_sv[__sg_i]}" '%s' "${__sg_sv[__sg_i+2]}"
      if [[ ${__sg_sv[__sg_i+3]} != *x* ]]; then builtin export -n "${__sg_sv[__sg_i]}"; fi
    else
      builtin unset -v "${__sg_sv[__sg_i]}"
    fi
  done
  __sg_sv=()
  if [[ -n $__sg_cd ]]; then
    builtin cd -- "$__sg_opwd" 2>/dev/null
    if [[ -n $__sg_hadol ]]; then OLDPWD=$__sg_ool; else builtin unset -v OLDPWD; fi
  fi
}
readonly -f __sg_f __sg_pre __sg_post
`

// sessInitLines returns the init script for a session whose private directory is dir,
// ending with the first frame (nonce) that tells the session the shell is ready.
func sessInitLines(dir, nonce string) []byte {
	var b strings.Builder
	b.WriteString(sessInitScript)
	b.WriteString("__sg_d=" + sessQuote(dir) + "; readonly __sg_d\n")
	b.WriteString("\\__sg_f 0 " + nonce + "\n")
	return []byte(b.String())
}

// sessCommandLine returns the line that sources the command file in the current shell
// (so cd, export, aliases and functions persist) with stdin from /dev/null, stdout and
// stderr on the per-command FIFOs and the control fd closed, then reports the frame.
// The redirections sit on the `.` builtin itself, not on a { } group, so no alias can
// touch the line's first word; every command word is backslash-quoted for the same
// reason. With perCall, the per-call file (see sessPerCallScript) is sourced first,
// under the same redirections (so a failing cd, which Session.Exec checks for first,
// reaches the command's stderr), and
// __sg_f undoes what it changed before reporting.
func sessCommandLine(nonce string, perCall bool) []byte {
	const redir = ` </dev/null >"$__sg_d/o" 2>"$__sg_d/e" 3>&-`
	var b strings.Builder
	if perCall {
		b.WriteString(`\. "$__sg_d/p"` + redir + " && ")
	}
	b.WriteString(`\. "$__sg_d/c"` + redir + `; \__sg_f "$?" `)
	b.WriteString(nonce)
	if perCall {
		b.WriteString(" r")
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// sessPerCallScript returns the file that applies a per-call cwd and env with
// __sg_pre. It is a file, not part of the command line, because bash reads a pipe one
// byte at a time but a sourced file in one go, and env values may be long.
func sessPerCallScript(cwd string, env map[string]string) []byte {
	var b strings.Builder
	b.WriteString(`\__sg_pre `)
	b.WriteString(sessQuote(cwd))
	for _, k := range sessSortedKeys(env) {
		b.WriteString(" " + k + " " + sessQuote(env[k]))
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// sessQuote quotes s for bash with $'…', escaping every byte that is not plainly safe,
// so any bytes (but NUL, which callers reject) survive the trip.
func sessQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '/', c == '.', c == '_', c == '-', c == ' ', c == ':', c == '=', c == ',', c == '+':
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
