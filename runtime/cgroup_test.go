package runtime

import (
	"errors"
	"testing"
)

func TestCgroupNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in, group, scope string
	}{
		{"plain", "sb_1-a", "sb_1-a", "sandgate-sb_1-a"},
		{"empty", "", "_", "sandgate-default"},
		{"slashes and dots", "../a/b.c", "___a_b_c", "sandgate-___a_b_c"},
		{"newline", "a\nb", "a_b", "sandgate-a_b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cgroupName(tt.in); got != tt.group {
				t.Errorf("cgroupName(%q) = %q, want %q", tt.in, got, tt.group)
			}
			if got := scopeDirName(tt.in); got != tt.scope {
				t.Errorf("scopeDirName(%q) = %q, want %q", tt.in, got, tt.scope)
			}
			if got := sandboxOfGroup(cgroupName(tt.in) + ".0a1b2c3d"); got != tt.group {
				t.Errorf("sandboxOfGroup = %q, want %q", got, tt.group)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"negative memory", Config{MemoryBytes: -1}, ErrInvalid},
		{"negative pids", Config{Pids: -1}, ErrInvalid},
		{"cpu below 10", Config{CPUMillis: 5}, ErrInvalid},
		{"limits without cgroups", Config{NoCgroups: true, Pids: 5}, ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.Dir = t.TempDir()
			s, err := New(&c)
			if err == nil {
				_ = s.Close(testCtx(t))
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNoCgroupsUsage(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{NoCgroups: true})
	if _, err := s.Usage(); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("Usage: %v, want ErrNoCgroups", err)
	}
	if err := s.SetLimits(Limits{Pids: 3}); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("SetLimits: %v, want ErrNoCgroups", err)
	}
}
