package main

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/sdk"
)

func cmdCreate(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "create", `[flags]

Creates a sandbox and prints its id. With --id, creating a sandbox that exists with
the same settings prints its id again; one with other settings is a conflict.`)
	id := f.String("id", "", "sandbox `id` (default: one the server makes, sb_…)")
	labels := kvFlag{}
	f.Var(labels, "label", "label `k=v` (repeatable)")
	envs := kvFlag{}
	f.Var(envs, "env", "environment variable `K=V` of every command in the sandbox (repeatable)")
	cwd := f.String("cwd", "", "default working directory, relative to the workspace")
	out := f.addOutput()
	if _, code, ok := f.parse(e, args, 0, 0); !ok {
		return code
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	sb, _, err := f.client(e).CreateSandbox(ctx, sdk.CreateSandboxRequest{ID: *id, Labels: labels, Env: envs, Cwd: *cwd})
	if err != nil {
		return f.fail(ctx, e, err)
	}
	if asJSON {
		return printJSON(e, sb)
	}
	fmt.Fprintln(e.stdout, sb.ID)
	return 0
}
