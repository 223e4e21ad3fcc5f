package diskimg

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// TestHoldersOpenFile: once its mount is lazily detached, the filesystem of an image is
// in no mount namespace, and the file this process holds open on it names the holder,
// as does the device opened itself.
func TestHoldersOpenFile(t *testing.T) {
	t.Parallel()
	image, dir := newImage(t, MinSize)
	m := attach(t, image, dir)
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Detach(dir); err != nil {
		t.Fatal(err)
	}
	if !Held(m.Loop, image) {
		t.Fatal("the image is not held with a file open on its detached mount")
	}
	device, err := os.Open("/dev/loop" + strconv.Itoa(m.Loop)) // as a probe like blkid does
	if err != nil {
		t.Fatal(err)
	}
	defer device.Close()
	want := strconv.Itoa(os.Getpid()) + " ("
	got := Holders(m.Loop)
	for _, held := range []*os.File{f, device} {
		fd := " fd " + strconv.Itoa(int(held.Fd()))
		if !slices.ContainsFunc(got, func(h string) bool { return strings.HasPrefix(h, want) && strings.HasSuffix(h, fd) }) {
			t.Errorf("Holders(%d) = %q, want this process's%s (%s)", m.Loop, got, fd, held.Name())
		}
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
