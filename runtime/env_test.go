package runtime

import (
	"maps"
	"testing"
)

// TestBaseEnv: processes on the host start from the gateway's PATH and USER; an
// isolated sandbox's start from a default PATH and no USER, so that no value of the
// server's environment reaches it.
func TestBaseEnv(t *testing.T) {
	t.Setenv("PATH", "/server/bin:/usr/bin")
	t.Setenv("USER", "server-user")
	for _, tc := range []struct {
		name   string
		onHost bool
		want   map[string]string
	}{
		{"on the host", true, map[string]string{"PATH": "/server/bin:/usr/bin", "HOME": "/ws", "LANG": "C.UTF-8", "USER": "server-user"}},
		{"isolated", false, map[string]string{"PATH": defaultPath, "HOME": "/ws", "LANG": "C.UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := baseEnv("/ws", tc.onHost); !maps.Equal(got, tc.want) {
				t.Fatalf("baseEnv: %v; want %v", got, tc.want)
			}
		})
	}
}
