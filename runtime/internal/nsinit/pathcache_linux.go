package nsinit

import (
	"fmt"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// pathCache remembers where a PATH search found a program, for searches that only
// looked in directories the sandbox cannot change: ones on a read-only mount, or
// missing below one. A search of the default PATH for a program in /usr/bin stats
// four files (about 12 µs of every exec on our 2-vCPU VM under load); a hit is a map
// lookup. Mounts do not change once the sandbox is set up (its processes may not
// mount), so whether a directory is read-only is looked up once.
//
// The host can still change what lies under a read-only bind of its own directories:
// a program removed there makes the exec fail with ENOENT, and spawn then searches
// again (forget); one installed earlier in the PATH than a cached one is found once
// the sandbox's init restarts. The spawner thread uses it, and the reaper forgets an
// entry whose async spawn found no file (asyncSlots.reaped).
type pathCache struct {
	mu    sync.Mutex
	found map[pathKey]string
	ro    map[string]bool
}

type pathKey struct{ name, path string }

// maxPathCache bounds the programs remembered; past it, searches are not cached.
const maxPathCache = 512

// lookPath finds name as execve would after the shell's PATH search, inside the
// sandbox, and reports whether the answer came from the cache. A name with a slash is
// used as given (relative to dir).
func (pc *pathCache) lookPath(name string, env []string, dir string) (string, bool, error) {
	if strings.Contains(name, "/") {
		return name, false, nil
	}
	key := pathKey{name, pathOf(env)}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if p, ok := pc.found[key]; ok {
		return p, true, nil
	}
	cacheable := true
	for _, d := range strings.Split(key.path, ":") {
		if d == "" {
			d = "."
		}
		cacheable = cacheable && path.IsAbs(d) && pc.readOnly(path.Clean(d))
		p := path.Join(d, name)
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			if cacheable && len(pc.found) < maxPathCache {
				if pc.found == nil {
					pc.found = map[pathKey]string{}
				}
				// The request's strings are views of the spawner's receive buffer.
				pc.found[pathKey{strings.Clone(key.name), strings.Clone(key.path)}] = p
			}
			return p, false, nil
		}
	}
	return "", false, fmt.Errorf("failed to find %s in PATH: %w", name, unix.ENOENT)
}

// forget drops what the cache holds for name under env's PATH.
func (pc *pathCache) forget(name string, env []string) { pc.forgetKey(pathKey{name, pathOf(env)}) }

// forgetKey drops the cache's entry for key.
func (pc *pathCache) forgetKey(key pathKey) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	delete(pc.found, key)
}

// readOnly reports whether the sandbox cannot add files to dir: dir, or the nearest
// directory above it that exists, is on a read-only mount.
func (pc *pathCache) readOnly(dir string) bool {
	if ro, ok := pc.ro[dir]; ok {
		return ro
	}
	var st unix.Statfs_t
	var ro bool
	switch err := unix.Statfs(dir, &st); {
	case err == nil:
		ro = st.Flags&unix.ST_RDONLY != 0
	case dir != "/" && (err == unix.ENOENT || err == unix.ENOTDIR):
		ro = pc.readOnly(path.Dir(dir))
	}
	if pc.ro == nil {
		pc.ro = map[string]bool{}
	}
	if len(pc.ro) < maxPathCache {
		pc.ro[strings.Clone(dir)] = ro // dir may be a view of a request
	}
	return ro
}

// pathOf returns the PATH of env, or DefaultPath.
func pathOf(env []string) string {
	p := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}
