package gateway

// The driver programs of TestGeneratedClients: each uses only its generated client
// (and the language's standard library) to tour a sandbox. They read the server's URL,
// the token and the sandbox id from $SANDGATE_URL, $SANDGATE_TOKEN and $SANDGATE_SANDBOX,
// print "tour ok" at the end and exit non-zero with a message on the first surprise.

// goTourDriver is main.go of a module whose package sgclient is oapi-codegen's output.
const goTourDriver = `package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"sgtour/sgclient"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go tour: "+format+"\n", args...)
	os.Exit(1)
}

// sseKinds uses the generated SSE event types: an output stream's event decoded by
// its discriminator.
func sseKinds(raw []byte) (string, error) {
	var ev sgclient.ProcessOutputSseEvent
	if err := ev.UnmarshalJSON(raw); err != nil {
		return "", err
	}
	v, err := ev.ValueByDiscriminator()
	if err != nil {
		return "", err
	}
	switch e := v.(type) {
	case sgclient.SseExitEvent:
		return fmt.Sprintf("exit %v", *e.Data.ExitCode), nil
	case sgclient.SseOutputEvent:
		return "output", nil
	case sgclient.SseGapEvent:
		return fmt.Sprintf("gap %d-%d", e.Data.From, e.Data.To), nil
	}
	return "", fmt.Errorf("unknown event %T", v)
}

func main() {
	base, token, sb := os.Getenv("SANDGATE_URL"), os.Getenv("SANDGATE_TOKEN"), os.Getenv("SANDGATE_SANDBOX")
	auth := sgclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
	c, err := sgclient.NewClientWithResponses(base, auth)
	if err != nil {
		fail("client: %v", err)
	}
	ctx := context.Background()

	created, err := c.CreateSandboxWithResponse(ctx, sgclient.SandboxCreateRequest{Id: &sb})
	if err != nil || created.StatusCode() != http.StatusCreated || created.JSON201 == nil || created.JSON201.Id != sb {
		fail("create: %v %d %s", err, created.StatusCode(), created.Body)
	}

	cmd := "echo hi"
	ran, err := c.ExecCommandWithResponse(ctx, sb, sgclient.ExecRequest{Command: &cmd})
	if err != nil || ran.JSON200 == nil || ran.JSON200.Stdout != "hi\n" || ran.JSON200.ExitCode != 0 {
		fail("exec: %v %d %s", err, ran.StatusCode(), ran.Body)
	}

	content := "written by the generated Go client\n"
	put, err := c.WriteFileWithBodyWithResponse(ctx, sb, &sgclient.WriteFileParams{Path: "notes/go.txt"}, "application/octet-stream", strings.NewReader(content))
	if err != nil || put.StatusCode() != http.StatusNoContent {
		fail("write file: %v %d %s", err, put.StatusCode(), put.Body)
	}
	got, err := c.ReadFileWithResponse(ctx, sb, &sgclient.ReadFileParams{Path: "notes/go.txt"})
	if err != nil || got.StatusCode() != http.StatusOK || !bytes.Equal(got.Body, []byte(content)) {
		fail("read file: %v %d %q", err, got.StatusCode(), got.Body)
	}

	list, err := c.ListSandboxesWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil {
		fail("list: %v %d %s", err, list.StatusCode(), list.Body)
	}
	found := false
	for _, s := range list.JSON200.Sandboxes {
		found = found || s.Id == sb
	}
	if !found {
		fail("list: %s not in %s", sb, list.Body)
	}

	kind, err := sseKinds([]byte(` + "`" + `{"event":"exit","data":{"exit_code":0,"signal":null}}` + "`" + `))
	if err != nil || kind != "exit 0" {
		fail("sse event: %q %v", kind, err)
	}

	del, err := c.DeleteSandboxWithResponse(ctx, sb)
	if err != nil || del.StatusCode() != http.StatusNoContent {
		fail("delete: %v %d %s", err, del.StatusCode(), del.Body)
	}
	gone, err := c.GetSandboxWithResponse(ctx, sb)
	if err != nil || gone.StatusCode() != http.StatusNotFound || gone.JSON404 == nil {
		fail("get after delete: %v %d %s", err, gone.StatusCode(), gone.Body)
	}
	fmt.Println("tour ok")
}
`

// tsTourDriver is tour.ts beside openapi-typescript's api.ts; tsc --strict compiles
// it and node runs the result with openapi-fetch.
const tsTourDriver = `import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type OutputEvent = components["schemas"]["ProcessOutputSseEvent"];
type SandboxEvent = components["schemas"]["SandboxEventSseEvent"];

function must(cond: boolean, what: string): asserts cond {
	if (!cond) throw new Error(what);
}

// The generated SSE event types: narrowed on the event name.
function describe(ev: OutputEvent): string {
	switch (ev.event) {
		case "output":
			return "output at " + ev.data.offset;
		case "gap":
			return "gap " + ev.data.from + "-" + ev.data.to;
		case "exit":
			return "exit " + ev.data.exit_code;
	}
}

const base = process.env.SANDGATE_URL ?? "";
const token = process.env.SANDGATE_TOKEN ?? "";
const sb = process.env.SANDGATE_SANDBOX ?? "";
const client = createClient<paths>({ baseUrl: base, headers: { Authorization: "Bearer " + token } });

const created = await client.POST("/v1/sandboxes", { body: { id: sb } });
must(created.response.status === 201 && created.data?.id === sb, "create: " + created.response.status + " " + JSON.stringify(created.error));

const ran = await client.POST("/v1/sandboxes/{sb}/exec", { params: { path: { sb } }, body: { command: "echo hi" } });
must(ran.data?.stdout === "hi\n" && ran.data.exit_code === 0, "exec: " + ran.response.status + " " + JSON.stringify(ran.data ?? ran.error));

// Request fields that have defaults stay optional.
type Body<N extends keyof components["requestBodies"]> = components["requestBodies"][N]["content"]["application/json"];
const term: Body<"TerminalRequest"> = {};
const proc: Body<"ProcessCreateRequest"> = { command: "true" };
const sess: Body<"SessionCreateRequest"> = {};
const dir: Body<"MkdirRequest"> = { path: "notes" };
const made = await client.POST("/v1/sandboxes/{sb}/files/mkdir", { params: { path: { sb } }, body: { path: "notes" } });
must(made.response.status === 204, "mkdir: " + made.response.status + " " + JSON.stringify(made.error));
const started = await client.POST("/v1/sandboxes/{sb}/processes", { params: { path: { sb } }, body: { argv: ["true"] } });
must(started.response.status === 201 && started.data?.id !== undefined, "start process: " + started.response.status + " " + JSON.stringify(started.error));

const content = "written by the generated TypeScript client\n";
const put = await client.PUT("/v1/sandboxes/{sb}/files", {
	params: { path: { sb }, query: { path: "notes/ts.txt" } },
	body: content,
	bodySerializer: (b?: string) => b ?? "",
	headers: { "Content-Type": "application/octet-stream" },
});
must(put.response.status === 204, "write file: " + put.response.status + " " + JSON.stringify(put.error));
const got = await client.GET("/v1/sandboxes/{sb}/files", { params: { path: { sb }, query: { path: "notes/ts.txt" } }, parseAs: "text" });
must(got.response.status === 200 && got.data === content, "read file: " + got.response.status + " " + JSON.stringify(got.data));

const list = await client.GET("/v1/sandboxes");
must(list.data?.sandboxes.some((s) => s.id === sb) === true, "list: " + JSON.stringify(list.data ?? list.error));

const exit: OutputEvent = { event: "exit", data: { exit_code: 0, signal: null } };
const msg: SandboxEvent = { id: "7", data: { seq: 7, type: "process.exited", at: "2026-01-02T03:04:05Z", data: {} } };
must(describe(exit) === "exit 0" && msg.data.seq === 7, "sse types: " + describe(exit));
void [term, proc, sess, dir];

const del = await client.DELETE("/v1/sandboxes/{sb}", { params: { path: { sb } } });
must(del.response.status === 204, "delete: " + del.response.status + " " + JSON.stringify(del.error));
const gone = await client.GET("/v1/sandboxes/{sb}", { params: { path: { sb } } });
must(gone.response.status === 404 && gone.error?.error.code === "not_found", "get after delete: " + gone.response.status + " " + JSON.stringify(gone.error));
console.log("tour ok");
`
