package runtime

import (
	"maps"
	"os"
	"slices"
	"strings"
)

// defaultPath is the PATH of the base environment in an isolated sandbox, and on the
// host when the gateway has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseEnv returns the small environment every process starts from: HOME (the
// workspace), LANG and PATH, and USER for processes on the host. Processes on the host
// (onHost: the local driver) get the gateway's PATH and USER; an isolated sandbox gets
// defaultPath and no USER, so no value of the server's environment reaches it.
func baseEnv(dir string, onHost bool) map[string]string {
	m := map[string]string{"PATH": defaultPath, "HOME": dir, "LANG": "C.UTF-8"}
	if !onHost {
		return m
	}
	if path := os.Getenv("PATH"); path != "" {
		m["PATH"] = path
	}
	user := os.Getenv("USER")
	if user == "" {
		user = os.Getenv("LOGNAME")
	}
	if user != "" {
		m["USER"] = user
	}
	return m
}

// envList turns m into a sorted KEY=value list. Keys that are empty or hold '=' or NUL
// are skipped, as execve cannot pass them.
func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(m[k], 0) {
			continue
		}
		out = append(out, k+"="+m[k])
	}
	return out
}

// overlay returns base with every layer applied in order, later layers winning. It
// returns base itself, not a copy, when there is nothing to apply.
func overlay(base map[string]string, layers ...map[string]string) map[string]string {
	n := 0
	for _, l := range layers {
		n += len(l)
	}
	if n == 0 {
		return base
	}
	out := make(map[string]string, len(base)+n)
	maps.Copy(out, base)
	for _, l := range layers {
		maps.Copy(out, l)
	}
	return out
}
