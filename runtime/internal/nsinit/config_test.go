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
		{"userns", Config{ID: "a", Workspace: "/w", UserNS: &DefaultIDRange, UID: 65535, GID: 1}, false},
		{"userns root onto root", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 0, HostGID: 1, Size: 1}}, true},
		{"userns gid root onto root", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 1, HostGID: 0, Size: 1}}, true},
		{"userns empty", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 1, HostGID: 1}}, true},
		{"userns past the last id", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 1 << 31, HostGID: 1, Size: 1 << 31}}, true},
		{"uid outside the userns", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 1, HostGID: 1, Size: 10}, UID: 10}, true},
		{"gid outside the userns", Config{ID: "a", Workspace: "/w", UserNS: &IDRange{HostUID: 1, HostGID: 1, Size: 10}, GID: 10}, true},
		{"lease", Config{ID: "a", Workspace: "/w", Lease: true, LeaseUntil: 5}, false},
		{"lease with freeze", Config{ID: "a", Workspace: "/w", Lease: true, Cgroup: "/cg/home", Freeze: "/cg/trees"}, false},
		{"lease_until without a lease", Config{ID: "a", Workspace: "/w", LeaseUntil: 5}, true},
		{"freeze without a lease", Config{ID: "a", Workspace: "/w", Cgroup: "/cg/home", Freeze: "/cg/trees"}, true},
		{"freeze without cgroup", Config{ID: "a", Workspace: "/w", Lease: true, Freeze: "/cg/trees"}, true},
		{"relative freeze", Config{ID: "a", Workspace: "/w", Lease: true, Cgroup: "/cg/home", Freeze: "cg/trees"}, true},
		{"init inside the freeze group", Config{ID: "a", Workspace: "/w", Lease: true, Cgroup: "/cg/trees/home", Freeze: "/cg/trees/"}, true},
		{"init is the freeze group", Config{ID: "a", Workspace: "/w", Lease: true, Cgroup: "/cg", Freeze: "/cg"}, true},
		{"freeze is a sibling with a common prefix", Config{ID: "a", Workspace: "/w", Lease: true, Cgroup: "/cg/trees2", Freeze: "/cg/trees"}, false},
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
			if err == nil && tt.cfg.UserNS != nil && (got.UserNS == tt.cfg.UserNS || *got.UserNS != *tt.cfg.UserNS) {
				t.Fatalf("UserNS = %p %v, want a copy of %p %v", got.UserNS, got.UserNS, tt.cfg.UserNS, tt.cfg.UserNS)
			}
		})
	}
}
