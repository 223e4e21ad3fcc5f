// Package frame parses the control frames a session shell writes on its control fd
// after each command, and the `export -p` listing inside them.
//
// # Format
//
// A frame for nonce N is
//
//	"\nsandgate:" N " " STATUS "\n" PWDOUT "\x00" EXPORTS "\nsandgate:" N ":end\n"
//
// STATUS is the command's decimal exit status, PWDOUT is the output of bash's `pwd`
// builtin (the cwd and one newline, or nothing if pwd failed) and EXPORTS is the output
// of bash's `export -p`, one variable per line (bash quotes values holding a newline
// with $'…', so a line never spans two). The nonce is random per command and never
// visible to the command, so output cannot forge a frame; bytes before the frame's start
// are ignored.
//
// # Caveats
//
// Parsing is pure: no I/O, no globals. Arrays, associative arrays and namerefs in the
// listing are skipped (the environment of a child holds none of them), as are exported
// names that have no value.
package frame
