package nsinit

import (
	"errors"
	"testing"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"minimal", Config{ID: "a", Workspace: "/w"}, false},
		{"no id", Config{Workspace: "/w"}, true},
		{"long id", Config{ID: string(make([]byte, 65)), Workspace: "/w"}, true},
		{"relative workspace", Config{ID: "a", Workspace: "w"}, true},
		{"relative rootfs", Config{ID: "a", Workspace: "/w", Rootfs: "r"}, true},
		{"unknown network", Config{ID: "a", Workspace: "/w", Network: "wifi"}, true},
		{"negative uid", Config{ID: "a", Workspace: "/w", UID: -1}, true},
		{"host network", Config{ID: "a", Workspace: "/w", Network: NetworkHost}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.cfg.withDefaults()
			if tt.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("err = %v, want an ErrInvalidConfig: %v", err, tt.wantErr)
			}
			if err == nil && tt.cfg.Network == "" && got.Network != NetworkLoopback {
				t.Fatalf("Network = %q, want loopback by default", got.Network)
			}
		})
	}
}
