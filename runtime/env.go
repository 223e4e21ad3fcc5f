package runtime

import (
	"maps"
	"os"
	"slices"
	"strings"
)

// defaultPath is the PATH of the base environment when the gateway has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseEnv returns the small environment every process starts from: PATH (the gateway's,
// or a default), HOME (the workspace), LANG and USER.
func baseEnv(dir string) map[string]string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	user := os.Getenv("USER")
	if user == "" {
		user = os.Getenv("LOGNAME")
	}
	m := map[string]string{"PATH": path, "HOME": dir, "LANG": "C.UTF-8"}
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
