package gateway

import (
	"context"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// shellJSON is an entry of OpenCode's shell list.
type shellJSON struct {
	Path string `json:"path"`
	Name string `json:"name"`
	// Acceptable is false for entries that refuse logins (nologin, false).
	Acceptable bool `json:"acceptable"`
}

// shellsScript prints the sandbox's $SHELL, then each absolute path of /etc/shells that
// is an executable file as the sandbox sees it, one a line.
const shellsScript = `printf '%s\n' "${SHELL:-}"
[ -r /etc/shells ] || exit 0
while IFS= read -r l || [ -n "$l" ]; do
  case "$l" in /*) [ -f "$l" ] && [ -x "$l" ] && printf '%s\n' "$l" ;; esac
done < /etc/shells`

// shellsTimeout bounds the one-shot command that lists the shells.
const shellsTimeout = 10 * time.Second

// sandboxShells lists the shells sandbox sb has, and the one it prefers: its $SHELL
// if that is an acceptable one of the list, else bash, else sh, else the first
// acceptable one, else /bin/sh. The list is made by a one-shot command in the
// sandbox (an exec: the same budget and activity), so it is the sandbox's own view.
func (s *Server) sandboxShells(ctx context.Context, sb string) (list []shellJSON, preferred string, err error) {
	res, err := s.node.Exec(ctx, sb, runtime.ExecOptions{Argv: []string{"/bin/sh", "-c", shellsScript},
		Timeout: shellsTimeout, OutputLimit: 64 << 10})
	if err != nil {
		return nil, "", err
	}
	if res.ExitCode != 0 {
		return nil, "", errorf(http.StatusServiceUnavailable, codeUnavailable,
			"failed to list the sandbox's shells: exit code %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr))).retry(time.Second)
	}
	lines := strings.Split(string(res.Stdout), "\n")
	shellVar := lines[0]
	list = []shellJSON{}
	seen := map[string]bool{}
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		name := path.Base(l)
		list = append(list, shellJSON{Path: l, Name: name, Acceptable: name != "nologin" && name != "false"})
	}
	return list, preferShell(list, shellVar), nil
}

// preferShell picks the preferred shell of list (see sandboxShells).
func preferShell(list []shellJSON, shellVar string) string {
	for _, want := range []func(shellJSON) bool{
		func(sh shellJSON) bool { return shellVar != "" && sh.Path == shellVar },
		func(sh shellJSON) bool { return sh.Name == "bash" },
		func(sh shellJSON) bool { return sh.Name == "sh" },
		func(shellJSON) bool { return true },
	} {
		for _, sh := range list {
			if sh.Acceptable && want(sh) {
				return sh.Path
			}
		}
	}
	return "/bin/sh"
}
