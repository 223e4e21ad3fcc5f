//go:build linux && cgo && amd64

package nsinit

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAsyncSpawnTooBigForSlot: a NoWait spawn whose strings do not fit a slot's args
// area (slotArgs) is started the waited way instead, with all of them, and so is one
// after it that fits again (the spawner's buffers for waited spawns, grown past what
// they keep, are let go in between); a NoWait spawn that fails that way is answered
// as any failed spawn.
func TestAsyncSpawnTooBigForSlot(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	big := strings.Repeat("x", slotArgs+1024)
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"too big", []string{"PATH=" + DefaultPath, "BIG=" + big}},
		{"fits", []string{"PATH=" + DefaultPath, "BIG=" + big[:100]}},
		{"too big again", []string{"PATH=" + DefaultPath, "BIG=" + big}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := len(tt.env[1]) - len("BIG=")
			_, r := noWait(t, in, SpawnRequest{Argv: []string{"sh", "-c", `test "${#BIG}" -eq "$1"`, "sh", strconv.Itoa(want)}, Env: tt.env})
			if st, ok := readStatus(t, r); !ok || st.Code != 0 {
				t.Fatalf("status %+v (%v): the child did not get BIG of %d bytes", st, ok, want)
			}
		})
	}
	ch, r := noWait(t, in, SpawnRequest{Argv: []string{"/no/such/program"}, Env: []string{"BIG=" + big}})
	if st, ok := readStatus(t, r); ok {
		t.Fatalf("a big spawn of a missing program: status %+v, want none", st)
	}
	if _, err := ch.Wait(testCtx(t)); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("a big spawn of a missing program: %v, want ENOENT", err)
	}
}
