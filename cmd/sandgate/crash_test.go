package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashRecordsRunningProcesses: serve killed with SIGKILL while a process and a
// terminal's shell run records both as exited on its next start on the same --data,
// without any request for the sandbox first: GET /events has their process.exited
// (exit_code and signal null, reason "server_crashed"), and the process object says
// exited.
func TestCrashRecordsRunningProcesses(t *testing.T) {
	const tok = "e2e-token"
	data := t.TempDir()
	n := startNode(t, tok, "--data", data)
	n.post(t, tok, "/v1/sandboxes", `{"id":"cr1"}`)
	var proc struct {
		ID  string `json:"id"`
		PID int    `json:"pid"`
	}
	must(t, json.Unmarshal([]byte(n.post(t, tok, "/v1/sandboxes/cr1/processes", `{"argv":["sleep","297"],"tag":"bg"}`)), &proc))
	// The sweep that ends leftovers at start is not this test's subject: end the
	// process here, if it is still the one started (its pid may have been reused).
	sleeper := hostPIDOf(t, n.cmd.Process.Pid, "cr1", proc.PID)
	t.Cleanup(func() { killIfCmdline(t, sleeper, "sleep\x00297\x00") })
	// A terminal's shell is a process too.
	status, body := n.request(t, tok, "PUT", "/v1/sandboxes/cr1/terminals/t1", `{}`)
	var term struct{ Process string }
	if status/100 != 2 || json.Unmarshal([]byte(body), &term) != nil || term.Process == "" {
		t.Fatalf("PUT terminal: %d %s", status, body)
	}
	_, body = n.request(t, tok, "GET", "/v1/sandboxes/cr1/processes/"+term.Process, "")
	shell := n.pidOf(t, "cr1", body)
	shellCmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", shell))
	must(t, err)
	t.Cleanup(func() { killIfCmdline(t, shell, string(shellCmd)) })

	if err := n.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, n); code != -1 {
		t.Fatalf("serve exited with %d after SIGKILL", code)
	}
	// On the namespace runtime nothing of the sandbox outlives the server: each init
	// dies with it (Pdeathsig), and its pid namespace with the init.
	if !strings.Contains(n.log.String(), "runtime: namespace driver") {
		t.Fatalf("serve does not run sandboxes on the namespace runtime here: %s", n.log.String())
	}
	waitGone(t, []int{sleeper, shell})

	n2 := startNode(t, tok, "--data", data)
	exits := map[string]map[string]any{}
	for deadline := time.Now().Add(10 * time.Second); len(exits) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process.exited for %v of %s and %s 10s after the restart: %s", exits, proc.ID, term.Process, n2.log.String())
		}
		status, body := n2.request(t, tok, "GET", "/v1/sandboxes/cr1/events", "")
		if status != http.StatusOK {
			t.Fatalf("GET events: %d %s", status, body)
		}
		var page struct {
			Events []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"events"`
		}
		must(t, json.Unmarshal([]byte(body), &page))
		for _, e := range page.Events {
			if id, _ := e.Data["id"].(string); e.Type == "process.exited" && (id == proc.ID || id == term.Process) {
				exits[id] = e.Data
			}
		}
	}
	for id, d := range exits {
		if d["exit_code"] != nil || d["signal"] != nil || d["reason"] != "server_crashed" {
			t.Fatalf("process.exited of %s: %v", id, d)
		}
	}
	status, body = n2.request(t, tok, "GET", "/v1/sandboxes/cr1/processes/"+proc.ID, "")
	var obj map[string]any
	must(t, json.Unmarshal([]byte(body), &obj))
	if status != http.StatusOK || obj["status"] != "exited" || obj["exit_code"] != nil || obj["signal"] != nil ||
		obj["exited_at"] == nil || obj["tag"] != "bg" {
		t.Fatalf("GET process after the crash: %d %s", status, body)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// killIfCmdline sends SIGKILL to pid if its command line is cmdline (NUL-separated).
func killIfCmdline(t *testing.T, pid int, cmdline string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || string(b) != cmdline {
		return // gone, or another process now
	}
	t.Logf("killing leftover process %d", pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill leftover %d: %v", pid, err)
	}
}
