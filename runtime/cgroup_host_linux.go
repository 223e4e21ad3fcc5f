package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// v1Controllers are the cgroup v1 controllers the runtime sets limits with, in the
// order a new process is moved into their groups: pids first, so a fork loop is
// stopped as early as can be.
var v1Controllers = []string{"pids", "memory", "cpu"}

// cgroupHost is what this machine offers, found once per process: the server's own
// group in a writable cgroup2 hierarchy (with cgroup.kill), and its own group in each
// v1 hierarchy that holds a controller of v1Controllers.
type cgroupHost struct {
	v2    string            // the server's own cgroup2 directory; "" without containment
	v1    map[string]string // controller → the server's own directory in that hierarchy
	noV2  error             // why v2 is not used
	owned map[string]bool   // v2 controllers usable in our groups (pure v2 hosts)
}

var (
	cgHostOnce sync.Once
	cgHost     cgroupHost
)

// hostCgroups returns what this machine offers, found on first use.
func hostCgroups() *cgroupHost {
	cgHostOnce.Do(func() { cgHost = detectCgroups() })
	return &cgHost
}

// detectCgroups reads the mounts and the server's own groups, and checks that a child
// group of the server's cgroup2 group can be made and has cgroup.kill (Linux 5.14).
func detectCgroups() cgroupHost {
	h := cgroupHost{v1: map[string]string{}, owned: map[string]bool{}}
	v2Mount, v1Mounts, err := cgroupMounts()
	if err != nil {
		h.noV2 = fmt.Errorf("failed to read mounts: %w", err)
		return h
	}
	own, err := ownCgroups()
	if err != nil {
		h.noV2 = fmt.Errorf("failed to read /proc/self/cgroup: %w", err)
		return h
	}
	for _, c := range v1Controllers {
		if m, ok := v1Mounts[c]; ok {
			if p, ok := own[c]; ok && canMakeGroup(filepath.Join(m, p)) {
				h.v1[c] = filepath.Join(m, p)
			}
		}
	}
	p, ok := own[""]
	switch {
	case v2Mount == "":
		h.noV2 = errors.New("no cgroup2 hierarchy is mounted")
		return h
	case !ok:
		h.noV2 = errors.New("the server is in no cgroup2 group")
		return h
	}
	dir := filepath.Join(v2Mount, p)
	probe := filepath.Join(dir, fmt.Sprintf("%sprobe-%d", cgroupScopePrefix, os.Getpid()))
	if err := unix.Mkdir(probe, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		h.noV2 = fmt.Errorf("cgroup2 group %s is not writable: %w", dir, err)
		return h
	}
	hasKill := fileExists(filepath.Join(probe, "cgroup.kill"))
	_ = unix.Rmdir(probe)
	if !hasKill {
		h.noV2 = fmt.Errorf("cgroup2 at %s has no cgroup.kill (Linux 5.14 or later)", dir)
		return h
	}
	h.v2 = dir
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		for _, c := range strings.Fields(string(b)) {
			if _, inV1 := h.v1[c]; !inV1 {
				h.owned[c] = true
			}
		}
	}
	return h
}

// cgroupMounts returns the cgroup2 mount point and, for each v1 controller, the mount
// point of its hierarchy, from /proc/self/mountinfo.
func cgroupMounts() (v2 string, v1 map[string]string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	v1 = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		switch b[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = a[4]
			}
		case "cgroup":
			for _, o := range strings.Split(b[2], ",") {
				if _, seen := v1[o]; !seen {
					v1[o] = a[4]
				}
			}
		}
	}
	return v2, v1, sc.Err()
}

// ownCgroups returns the server's own group in each hierarchy, by controller; ""
// is the cgroup2 group.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, nil
}

// Containment says how this machine's sandboxes are contained, for the server to log
// at start. With a writable cgroup2 hierarchy (pure v2, or the unified one of a hybrid
// layout) every process tree runs in a cgroup of its own, placed there at clone, and is
// ended exactly with cgroup.kill, setsid descendants included. Without one the error
// says why, and trees are process groups (see the package doc). The text also names
// the controllers that carry limits.
func Containment() (string, error) {
	h := hostCgroups()
	var lim []string
	for _, c := range v1Controllers {
		switch {
		case h.v1[c] != "":
			lim = append(lim, c+" (v1)")
		case h.owned[c]:
			lim = append(lim, c+" (v2)")
		}
	}
	limits := "no limits"
	if len(lim) > 0 {
		limits = "limits: " + strings.Join(lim, ", ")
	}
	if h.v2 == "" {
		return "process groups; " + limits, fmt.Errorf("%w: %w", ErrNoCgroups, h.noV2)
	}
	return "cgroup2 under " + h.v2 + "; " + limits, nil
}

// Enforceable returns l without the limits this machine has no cgroup controller for
// (Containment names those it has), so a sandbox asked for them still starts; the
// caller logs what is dropped once.
func (l Limits) Enforceable() Limits {
	h := hostCgroups()
	has := func(c string) bool { return h.v1[c] != "" || (h.v2 != "" && h.owned[c]) }
	if !has("memory") {
		l.MemoryBytes = 0
	}
	if !has("pids") {
		l.Pids = 0
	}
	if !has("cpu") {
		l.CPUMillis = 0
	}
	return l
}

// canMakeGroup reports whether a child group can be made in dir (a server that is not
// root usually cannot), by making and removing one.
func canMakeGroup(dir string) bool {
	if !isDir(dir) {
		return false
	}
	probe := filepath.Join(dir, fmt.Sprintf("%sprobe-%d", cgroupScopePrefix, os.Getpid()))
	if err := unix.Mkdir(probe, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return false
	}
	_ = unix.Rmdir(probe)
	return true
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
