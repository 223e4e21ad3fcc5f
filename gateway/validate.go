package gateway

import (
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/runtime"
)

// maxTermSize is the largest terminal width and height, in cells, anywhere a size is
// given: a process's pty, a terminal's PUT and resize, a process resize, and the
// WebSocket resize control message. gateway/openapi.json states the same maximum on
// every cols and rows (TestOpenAPITermSize checks it).
const maxTermSize = 4096

// winSize validates a terminal size; with defaults, zero means 80x24.
func winSize(cols, rows uint16, defaults bool) (runtime.WinSize, error) {
	if defaults {
		if cols == 0 {
			cols = 80
		}
		if rows == 0 {
			rows = 24
		}
	}
	if !validTermSize(cols, rows) {
		return runtime.WinSize{}, badRequest("cols and rows must be between 1 and %d, not %dx%d", maxTermSize, cols, rows)
	}
	return runtime.WinSize{Cols: cols, Rows: rows}, nil
}

// validTermSize reports whether cols x rows is within 1..maxTermSize both ways.
func validTermSize(cols, rows uint16) bool {
	return cols >= 1 && rows >= 1 && cols <= maxTermSize && rows <= maxTermSize
}

// noNUL refuses a string field that holds a NUL byte, which no command, path, name or
// id can carry to the kernel (it would be cut there, or fail late and unclearly).
func noNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return badRequest("%s holds a NUL byte", field)
	}
	return nil
}

// noNULs is noNUL over several fields, given as name, value pairs.
func noNULs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := noNUL(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// noNULArgv refuses an argv with a NUL byte in any element, naming it.
func noNULArgv(argv []string) error {
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 { // the name is formatted only for the error
			return noNUL(fmt.Sprintf("argv[%d]", i), a)
		}
	}
	return nil
}
