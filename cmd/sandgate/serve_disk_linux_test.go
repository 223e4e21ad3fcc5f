package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestServeDiskImages: serve says at start whether workspace disk quotas are enforced;
// by default they are (this machine can), and a sandbox's workspace is then a
// filesystem of its own the size of its disk_bytes budget, as df inside it shows; with
// --disk-images=false it says they are off and the workspace is a plain directory.
func TestServeDiskImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flag, log string
		image           bool
	}{
		{"default", "", "workspace disk quotas enforced", true},
		{"off", "--disk-images=false", "workspace disk quotas are not enforced: disk images are off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const tok = "disk-token"
			var flags []string
			if tt.flag != "" {
				flags = append(flags, tt.flag)
			}
			n := startNode(t, tok, flags...)
			if !strings.Contains(n.log.String(), tt.log) {
				t.Fatalf("serve's log does not say %q:\n%s", tt.log, n.log.String())
			}
			n.post(t, tok, "/v1/sandboxes", `{"id": "d1"}`)
			out := n.post(t, tok, "/v1/sandboxes/d1/exec", `{"command": "df -P . | tail -1"}`)
			var res struct {
				Stdout string `json:"stdout"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			onLoop := strings.HasPrefix(res.Stdout, "/dev/loop")
			if onLoop != tt.image {
				t.Fatalf("df of the workspace: %q; want an image (/dev/loop…) %v", res.Stdout, tt.image)
			}
		})
	}
}
