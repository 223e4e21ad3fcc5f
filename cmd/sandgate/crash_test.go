package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCrashRecordsRunningProcesses: serve killed with SIGKILL while a process runs
// records that process as exited on its next start on the same --data, without any
// request for the sandbox first: GET /events has its process.exited (exit_code and
// signal null, reason "server_crashed"), and the process object says exited.
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
	t.Cleanup(func() { killIfCmdline(t, proc.PID, "sleep\x00297\x00") })

	if err := n.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, n); code != -1 {
		t.Fatalf("serve exited with %d after SIGKILL", code)
	}

	n2 := startNode(t, tok, "--data", data)
	var exited map[string]any
	for deadline := time.Now().Add(10 * time.Second); exited == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no process.exited for %s 10s after the restart: %s", proc.ID, n2.log.String())
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
			if e.Type == "process.exited" && e.Data["id"] == proc.ID {
				exited = e.Data
			}
		}
	}
	if exited["exit_code"] != nil || exited["signal"] != nil || exited["reason"] != "server_crashed" {
		t.Fatalf("process.exited data %v", exited)
	}
	status, body := n2.request(t, tok, "GET", "/v1/sandboxes/cr1/processes/"+proc.ID, "")
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
