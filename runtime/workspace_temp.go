package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Temporary files of WriteFile.
//
// WriteFile writes into a temporary file beside its target and renames it into place.
// The temporary name has a fixed length (wsTempLen bytes), so a target name of any
// length up to MaxNameLen works, and it is recognisable:
//
//	.sandgate-<process tag>-<random>.tmp
//
// The process tag (8 hex digits) is drawn once per process. A temporary file whose tag
// is not this process's was left by a process that died in the middle of a write (a
// kill -9 or a crash): no one will rename or remove it, and RemoveStaleTemps may remove
// it at any time without disturbing a write in flight.
const (
	wsTempPrefix = ".sandgate-"
	wsTempSuffix = ".tmp"
	wsTempTagLen = 8  // hex digits of the process tag
	wsTempRndLen = 12 // hex digits of the per-file random part
	wsTempLen    = len(wsTempPrefix) + wsTempTagLen + 1 + wsTempRndLen + len(wsTempSuffix)
)

// wsTempTag is this process's tag in temporary file names.
var wsTempTag = sessRandHex(wsTempTagLen / 2)

// wsTempName returns a fresh temporary file name for a write into directory dir.
func wsTempName(dir string) string {
	return path.Join(dir, wsTempPrefix+wsTempTag+"-"+sessRandHex(wsTempRndLen/2)+wsTempSuffix)
}

// wsStaleTemp reports whether name is a temporary file that no running write owns: one
// with another process's tag, or one in the older ".<target>.sandgate-<12 hex>.tmp"
// form, which no current process makes.
func wsStaleTemp(name string) bool {
	if rest, ok := strings.CutSuffix(name, wsTempSuffix); ok && len(name) == wsTempLen && strings.HasPrefix(name, wsTempPrefix) {
		rest = rest[len(wsTempPrefix):]
		tag, rnd, ok := strings.Cut(rest, "-")
		return ok && isHex(tag) && isHex(rnd) && len(tag) == wsTempTagLen && tag != wsTempTag
	}
	// The older form: "." + target + ".sandgate-" + 12 hex digits + ".tmp".
	const oldTail = len(".sandgate-") + 12 + len(".tmp")
	if len(name) <= 1+oldTail || name[0] != '.' || !strings.HasSuffix(name, ".tmp") {
		return false
	}
	tail := name[len(name)-oldTail:]
	return strings.HasPrefix(tail, ".sandgate-") && isHex(tail[len(".sandgate-"):len(".sandgate-")+12])
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// RemoveStaleTemps removes the temporary files that writes of processes now gone left
// in the workspace (see WriteFile), and returns how many it removed. It walks the whole
// workspace once, without following symlinks, so its cost grows with the number of
// entries: call it once per workspace per process, not per request. Writes in flight in
// this process are never touched, so it is safe to call concurrently with them.
func (w *Workspace) RemoveStaleTemps() (removed int, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("runtime: failed to remove stale temporary files in %q: %w", w.dir, err)
		}
	}()
	var errs []error
	walkErr := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == ".":
			return err
		case errors.Is(err, fs.ErrNotExist):
			return nil // removed meanwhile
		case err != nil:
			errs = append(errs, err) // an unreadable directory: skip it, keep going
			return nil
		}
		if d.Type().IsRegular() && wsStaleTemp(d.Name()) {
			if err := w.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			} else if err == nil {
				removed++
			}
		}
		return nil
	})
	if walkErr != nil {
		errs = append(errs, walkErr)
	}
	return removed, errors.Join(errs...)
}
