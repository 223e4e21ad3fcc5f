package diskimg

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestHolders: the device of a mounted image is named with this process's mount
// namespace.
func TestHolders(t *testing.T) {
	t.Parallel()
	image, dir := newImage(t, MinSize)
	m := attach(t, image, dir)
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	got := Holders(m.Loop)
	if !slices.ContainsFunc(got, func(h string) bool { return strings.HasSuffix(h, " "+ns) }) {
		t.Fatalf("Holders(%d) = %q, want one in %s", m.Loop, got, ns)
	}
}

func TestMountsDevice(t *testing.T) {
	t.Parallel()
	const info = "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n" +
		"301 22 7:3 / /tmp/x/workspaces/sb rw,nosuid shared:150 - ext4 /dev/loop3 rw\n"
	tests := []struct {
		name string
		dev  string
		want bool
	}{
		{"mounted", "7:3", true},
		{"another minor", "7:30", false},
		{"the root's", "0:21", true},
		{"none", "7:1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := mountsDevice([]byte(info), tt.dev); got != tt.want {
				t.Fatalf("mountsDevice(%q) = %v, want %v", tt.dev, got, tt.want)
			}
		})
	}
}
