// Package procfs reads where each process sits in the process tree from /proc: its
// parent, process group, session and state. The runtime uses it to reach processes a
// process group does not (the rest of a terminal's session, a shell's descendants),
// and a sandbox's init uses it inside the sandbox's own /proc.
package procfs

import (
	"os"
	"strconv"
	"strings"
)

// Proc is what /proc/<pid>/stat says of one process's place in the process tree.
type Proc struct {
	PID, PPID, Pgrp, Session int
	// State is the one-letter state; "Z" (zombie) and "X" (dead) are gone but unreaped.
	State string
}

// Gone reports whether the process has exited and only waits to be reaped.
func (p Proc) Gone() bool { return p.State == "Z" || p.State == "X" }

// List reads every process of the /proc mounted at root (normally "/proc"). Processes
// that exit while it reads are left out; an unreadable root gives nothing.
func List(root string) []Proc {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	out := make([]Proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(root + "/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := parseStat(pid, string(b)); ok {
			out = append(out, p)
		}
	}
	return out
}

// parseStat parses "pid (comm) state ppid pgrp session ..."; comm may hold anything,
// so the fields are found after its last ')'.
func parseStat(pid int, s string) (Proc, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return Proc{}, false
	}
	p := Proc{PID: pid, State: f[0]}
	p.PPID, _ = strconv.Atoi(f[1])
	p.Pgrp, _ = strconv.Atoi(f[2])
	p.Session, _ = strconv.Atoi(f[3])
	return p, true
}

// Descendants returns the live descendants of pid among procs.
func Descendants(procs []Proc, pid int) []int {
	kids := map[int][]int{}
	for _, p := range procs {
		if !p.Gone() {
			kids[p.PPID] = append(kids[p.PPID], p.PID)
		}
	}
	var out []int
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, k := range kids[p] {
			out = append(out, k)
			stack = append(stack, k)
		}
	}
	return out
}
