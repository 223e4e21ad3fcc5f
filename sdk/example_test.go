package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sandgate/sandgate/sdk"
)

// fakeGateway stands in for a gateway so the examples run without one.
func fakeGateway() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sandboxes/dev1/exec", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"exit_code": 0, "stdout": "hello\n", "stderr": "", "duration_ms": 3, "timed_out": false, "truncated": false}`)
	})
	mux.HandleFunc("GET /v1/sandboxes/{sb}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error": {"code": "not_found", "message": "sandbox \"%s\" not found"}}`, r.PathValue("sb"))
	})
	mux.HandleFunc("GET /v1/sandboxes/dev1/processes/proc_1/output", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: output\nid: 3\ndata: {\"stream\": \"stdout\", \"offset\": 0, \"data\": \"aGkK\"}\n\n")
		io.WriteString(w, "event: exit\ndata: {\"exit_code\": 0, \"signal\": null}\n\n")
	})
	return httptest.NewServer(mux)
}

func ExampleClient_Exec() {
	srv := fakeGateway()
	defer srv.Close()
	c := sdk.New(srv.URL, "my-token", nil)
	res, err := c.Exec(context.Background(), "dev1", sdk.ExecRequest{Command: "echo hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
	// Output: exit 0: hello
}

func ExampleIsNotFound() {
	srv := fakeGateway()
	defer srv.Close()
	c := sdk.New(srv.URL, "my-token", nil)
	_, err := c.GetSandbox(context.Background(), "nope")
	fmt.Println(sdk.IsNotFound(err))
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code, apiErr.Message)
	}
	// Output:
	// true
	// 404 not_found sandbox "nope" not found
}

func ExampleClient_ProcessOutput() {
	srv := fakeGateway()
	defer srv.Close()
	c := sdk.New(srv.URL, "my-token", nil)
	for ev, err := range c.ProcessOutput(context.Background(), "dev1", "proc_1", 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Type {
		case sdk.OutputData:
			fmt.Printf("%s at %d: %q\n", ev.Stream, ev.Offset, ev.Data)
		case sdk.OutputExit:
			fmt.Println("exit", *ev.ExitCode)
		}
	}
	// Output:
	// stdout at 0: "hi\n"
	// exit 0
}
