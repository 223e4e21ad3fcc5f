package procfs

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	cases := []struct {
		name, stat string
		want       Proc
		ok         bool
	}{
		{"plain", "12 (bash) S 1 12 12 34816 12 4194560", Proc{PID: 12, PPID: 1, Pgrp: 12, Session: 12, State: "S"}, true},
		{"comm with parens and spaces", "40 (a) b (c) Z 3 4 5 0", Proc{PID: 40, PPID: 3, Pgrp: 4, Session: 5, State: "Z"}, true},
		{"no comm end", "40 (abc S 3 4 5", Proc{}, false},
		{"short", "40 (abc) S 3", Proc{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pid := c.want.PID
			if !c.ok {
				pid = 40
			}
			got, ok := parseStat(pid, c.stat)
			if ok != c.ok || got != c.want {
				t.Fatalf("parseStat(%q) = %+v, %v; want %+v, %v", c.stat, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestListFindsSelf(t *testing.T) {
	procs := List("/proc")
	i := slices.IndexFunc(procs, func(p Proc) bool { return p.PID == os.Getpid() })
	if i < 0 {
		t.Fatalf("List did not find this process (%d) among %d", os.Getpid(), len(procs))
	}
	if procs[i].PPID != os.Getppid() {
		t.Fatalf("parent = %d, want %d", procs[i].PPID, os.Getppid())
	}
}

func TestDescendants(t *testing.T) {
	procs := []Proc{
		{PID: 1}, {PID: 2, PPID: 1}, {PID: 3, PPID: 2}, {PID: 4, PPID: 3, State: "Z"}, {PID: 5, PPID: 9},
	}
	got := Descendants(procs, 1)
	slices.Sort(got)
	if want := []int{2, 3}; !slices.Equal(got, want) {
		t.Fatalf("Descendants = %v, want %v (zombies and strangers left out)", got, want)
	}
}

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
