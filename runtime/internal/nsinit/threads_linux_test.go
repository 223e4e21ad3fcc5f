package nsinit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestInitGOMAXPROCS checks that the init runs with initProcs Ps, whatever the host's
// CPU count (see initProcs: with fewer, sysmon polls every 20 µs while the spawner and
// the reaper block), and that a sandbox process does not inherit the setting.
func TestInitGOMAXPROCS(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	b, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID()) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	want := "GOMAXPROCS=" + strconv.Itoa(initProcs)
	var got []string
	for _, kv := range strings.Split(string(b), "\x00") {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			got = append(got, kv)
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the init's environment has %q, want [%s]", got, want)
	}
	if res := run(t, in, "", "sh", "-c", "echo ${GOMAXPROCS-unset}"); res.stdout != "unset\n" || res.status.Code != 0 {
		t.Fatalf("a sandbox process sees GOMAXPROCS %q (exit %d), want unset", res.stdout, res.status.Code)
	}
}
