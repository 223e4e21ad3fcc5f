package proctest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestHostPID(t *testing.T) {
	if got := HostPID("/proc", os.Getpid(), os.Getpid()); got != os.Getpid() {
		t.Errorf("HostPID of this process in its own namespace = %d, want %d", got, os.Getpid())
	}
	if got := HostPID("/proc", os.Getpid(), 1<<30); got != -1 {
		t.Errorf("HostPID of a pid nobody has = %d, want -1", got)
	}
	if got := HostPID("/proc", 1<<30, 1); got != -1 {
		t.Errorf("HostPID in the namespace of a missing process = %d, want -1", got)
	}
}

func TestChildByCmdline(t *testing.T) {
	cmd := exec.Command("sleep", "30.0517")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Start returns once the child is forked; its command line is ours until it execs.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got := ChildByCmdline("/proc", os.Getpid(), "sleep\x0030.0517\x00")
		if got == cmd.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ChildByCmdline = %d, want the child %d", got, cmd.Process.Pid)
		}
	}
	if got := ChildByCmdline("/proc", 1, "sleep\x0030.0517\x00"); got != -1 {
		t.Errorf("ChildByCmdline of another parent = %d, want -1", got)
	}
}
