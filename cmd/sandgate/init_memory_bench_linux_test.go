package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// BenchmarkInitMemoryPackageInit measures what the sandgate binary's package
// initialisation costs a sandbox's init: the same serve, built twice and run
// alternately, its inits being either the sandgate binary re-executed (as always) or a
// program that links the nsinit package alone, whose init function runs the init the
// same way (built with -overlay, and pointed at with -ldflags -X on nsinit's
// initBinary). Everything else an init does is the same code. One sandbox per serve;
// each init's smaps_rollup Anonymous is read in three states: fresh (one exec of
// `true`), after 60 more and a quiet spell, and quiet after a burst of 2,000 execs by
// 8 clients. Reported per state: the median over the rounds (INIT_MEMORY_ROUNDS,
// default 2) of each, in KiB, and their ratio.
//
//	go test -run '^$' -bench BenchmarkInitMemoryPackageInit -benchtime 1x ./cmd/sandgate/
func BenchmarkInitMemoryPackageInit(b *testing.B) {
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("INIT_MEMORY_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	bins := []struct{ name, path string }{{"sandgate", buildBinary(b)}, {"nsinit-only", buildNsinitOnlyServe(b)}}
	states := []string{"fresh", "quiet", "burst"}
	kib := map[string][]int64{} // binary/state → figures
	for r := 0; r < rounds; r++ {
		for _, bin := range bins {
			for i, v := range initMemoryStates(b, bin.path) {
				key := bin.name + "/" + states[i]
				kib[key] = append(kib[key], v)
			}
		}
	}
	for _, st := range states {
		sg, only := median(kib["sandgate/"+st]), median(kib["nsinit-only/"+st])
		b.Logf("%s: sandgate %v KiB, nsinit-only %v KiB", st, kib["sandgate/"+st], kib["nsinit-only/"+st])
		b.ReportMetric(float64(sg), "sandgate-"+st+"-KiB")
		b.ReportMetric(float64(only), "only-"+st+"-KiB")
		b.ReportMetric(float64(sg)/float64(only), st+"-sandgate/only")
	}
}

// buildNsinitOnlyServe builds a program that links nsinit alone (added to the module by
// an overlay, so it may import the internal package, and kept out of the tree), and a
// serve whose sandbox inits are that program; it returns the serve's path.
func buildNsinitOnlyServe(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		tb.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport _ \"github.com/sandgate/sandgate/runtime/internal/nsinit\"\n\nfunc main() {}\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		tb.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "runtime/internal/nsinitonly/main.go"): src}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		tb.Fatal(err)
	}
	only, serve := filepath.Join(dir, "nsinit-only"), filepath.Join(dir, "sandgate")
	for _, args := range [][]string{
		{"build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", only, "./runtime/internal/nsinitonly"},
		{"build", "-o", serve, "-ldflags", "-X github.com/sandgate/sandgate/runtime/internal/nsinit.initBinary=" + only, "./cmd/sandgate"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	return serve
}

// initMemoryStates runs serve (bin) with the namespace driver and one sandbox, and
// returns its init's Anonymous KiB fresh, quiet after 61 execs, and quiet after a burst.
func initMemoryStates(tb testing.TB, bin string) []int64 {
	tb.Helper()
	const tok = "bench-token"
	nd := launchServeBin(tb, bin, "--listen", freeAddr(tb), "--data", tb.TempDir(), "--token", tok,
		"--node-id", "mem", "--raft-listen", "127.0.0.1:0", "--runtime", "namespace")
	defer func() { // stopped now, not at the end of the benchmark: rounds alternate
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = nd.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = nd.cmd.Process.Kill()
			<-done
		}
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	post := func(path, body string) error {
		req, _ := http.NewRequest("POST", "http://"+nd.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return nil
	}
	exe := func() error { return post("/v1/sandboxes/m/exec", `{"argv":["true"]}`) }
	if err := post("/v1/sandboxes", `{"id":"m"}`); err != nil {
		tb.Fatal(err)
	}
	if err := exe(); err != nil {
		tb.Fatal(err)
	}
	inits := initsOf(tb, nd.cmd.Process.Pid)
	if len(inits) != 1 {
		tb.Fatalf("serve has %d sandbox inits, want 1", len(inits))
	}
	anon := func() int64 { return smapsRollup(tb, inits[0])["Anonymous"] }
	// The quiet spells are what is measured (the init trims its heap after a second
	// without spawns), not a wait for an event.
	time.Sleep(300 * time.Millisecond)
	out := []int64{anon()}
	for range 60 {
		if err := exe(); err != nil {
			tb.Fatal(err)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	out = append(out, anon())
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 250 {
				if err := exe(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	return append(out, anon())
}

// median returns the median of vs (the lower middle one of an even count).
func median(vs []int64) int64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
