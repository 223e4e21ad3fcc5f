package procfs

import (
	"os"
	"slices"
	"testing"
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
