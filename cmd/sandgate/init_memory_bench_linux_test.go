package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkInitMemory measures the memory of an active sandbox's init on a real serve
// with the namespace driver (issue #14 figure: ≤ 2 MiB private, anonymous, per init).
// Three sandboxes each run `true` 20 times, so their inits have spawned and reaped; then
// each init's /proc/<pid>/smaps_rollup is read: Anonymous (the heap, stacks and
// written data of the init alone) and Private_Clean+Private_Dirty (with the binary's
// text shared by the serve process and the other inits, this is the init's own
// share). The baseline, from the same run, is a host `sleep` (a small C program).
func BenchmarkInitMemory(b *testing.B) {
	const tok, sandboxes = "bench-token", 3
	nd := startNode(b, tok, "--runtime", "namespace")
	for i := 0; i < sandboxes; i++ {
		id := "m" + strconv.Itoa(i)
		nd.post(b, tok, "/v1/sandboxes", `{"id":"`+id+`"}`)
		for j := 0; j < 20; j++ {
			nd.post(b, tok, "/v1/sandboxes/"+id+"/exec", `{"argv":["true"]}`)
		}
	}
	inits := initsOf(b, nd.cmd.Process.Pid)
	if len(inits) != sandboxes {
		b.Fatalf("serve has %d sandbox inits, want %d", len(inits), sandboxes)
	}
	sleep := exec.Command("sleep", "1000")
	if err := sleep.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	var anon, priv int64
	for _, pid := range inits {
		m := smapsRollup(b, pid)
		anon, priv = max(anon, m["Anonymous"]), max(priv, m["Private_Clean"]+m["Private_Dirty"])
	}
	sm := smapsRollup(b, sleep.Process.Pid)
	sAnon, sPriv := sm["Anonymous"], sm["Private_Clean"]+sm["Private_Dirty"]
	b.ReportMetric(float64(anon), "init-anon-KiB")
	b.ReportMetric(float64(priv), "init-private-KiB")
	b.ReportMetric(float64(sAnon), "sleep-anon-KiB")
	b.ReportMetric(float64(sPriv), "sleep-private-KiB")
	b.ReportMetric(float64(priv)/float64(sPriv), "init/sleep-private")
}

// initsOf returns the pids of the sandbox inits serve (pid) started: its children
// whose argv[0] is sandgate-init. Each thread lists the children it forked, and the
// inits are forked from one thread of their own, not the main one: every thread's list
// is read.
func initsOf(tb testing.TB, pid int) []int {
	tb.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		tb.Fatal(err)
	}
	var kids []string
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err == nil {
			kids = append(kids, strings.Fields(string(b))...)
		}
	}
	var out []int
	for _, f := range kids {
		kid, _ := strconv.Atoi(f)
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
		if err == nil && strings.HasPrefix(string(cmdline), "sandgate-init\x00") {
			out = append(out, kid)
		}
	}
	return out
}

// smapsRollup returns the kB figures of /proc/<pid>/smaps_rollup by name.
func smapsRollup(tb testing.TB, pid int) map[string]int64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && strings.HasSuffix(fs[0], ":") {
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			m[strings.TrimSuffix(fs[0], ":")] = n
		}
	}
	return m
}
