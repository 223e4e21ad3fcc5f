package runtime

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// crashEnv makes the test binary the crashing server of TestSweepAfterKill9: its value
// is the scope, and the workspace is the current directory.
const crashEnv = "SANDGATE_TEST_CRASH_SCOPE"

// crashHelper starts a sandbox with a process whose setsid'd grandchild writes its pid
// to the file pid, prints the process's pid and "ready", and waits to be killed.
func crashHelper() {
	wd, _ := os.Getwd()
	s, err := New(&Config{Dir: wd, Scope: os.Getenv(crashEnv), ID: "sb-crash"})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	p, err := s.Start(context.Background(), StartOptions{Command: escapeeScript + "echo started; exec sleep 300"})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	sub := p.Subscribe(0)
	var got []byte
	for !strings.Contains(string(got), "started") {
		ev, err := sub.Next(context.Background())
		if err != nil || ev.Kind == EventExit {
			fmt.Println("exited", err)
			os.Exit(1)
		}
		got = append(got, ev.Data...)
	}
	fmt.Println(p.Info().PID)
	fmt.Println("ready")
	select {}
}

// TestSweepAfterKill9: a server killed with kill -9 leaves its sandbox's processes (a
// setsid'd one included) running in their cgroups; Sweep of its scope ends them,
// removes the groups and names the sandbox.
func TestSweepAfterKill9(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	scope := "test-crash-" + randomHex(4)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), crashEnv+"="+scope)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for !slices.Contains(lines, "ready") && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if !slices.Contains(lines, "ready") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %q", lines)
	}
	leader := firstInt(t, []byte(lines[0]))
	escapee := escapeePID(t, nil, dir)
	t.Cleanup(func() {
		if !pidGone(leader) {
			_ = killPid(leader)
			waitGone(t, leader)
		}
	})
	if err := cmd.Process.Kill(); err != nil { // kill -9 of the "server"
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if pidGone(leader) || pidGone(escapee) {
		t.Fatal("the sandbox's processes died with the server: nothing to sweep")
	}

	ids, err := Sweep(scope)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"sb-crash"}) {
		t.Errorf("swept %q, want [sb-crash]", ids)
	}
	waitGone(t, leader)
	waitGone(t, escapee)
	h := hostCgroups()
	for _, root := range append([]string{h.v2}, h.v1["pids"], h.v1["memory"], h.v1["cpu"]) {
		if root != "" && fileExists(filepath.Join(root, scopeDirName(scope))) {
			t.Errorf("scope group left under %s", root)
		}
	}
	if again, err := Sweep(scope); err != nil || len(again) != 0 {
		t.Errorf("second sweep: %q, %v; want nothing", again, err)
	}
}
