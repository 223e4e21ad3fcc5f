package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
)

// TestQuickstart runs the example against a real gateway: the one at
// $SANDGATE_TEST_ADDR (token in $SANDGATE_TEST_TOKEN) if set, else one it starts on a
// loopback port.
func TestQuickstart(t *testing.T) {
	addr, token := os.Getenv("SANDGATE_TEST_ADDR"), os.Getenv("SANDGATE_TEST_TOKEN")
	if addr == "" {
		addr, token = startGateway(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, addr, token, &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`exec: "hello from sandgate", exit code 3`,
		"stdout: tick 1\n", "stdout: tick 2\n", "stdout: tick 3\n", "stderr: done\n",
		"process exited with code 0",
		"session: hi from sub",
		"deleted sb",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; output:\n%s", want, got)
		}
	}
}

// startGateway serves a single-node gateway on a loopback port for the test's duration.
func startGateway(t *testing.T) (addr, token string) {
	t.Helper()
	const tok = "quickstart-token"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(t.Context(), &gateway.Config{
		Listen: ln.Addr().String(), DataDir: t.TempDir(), Tokens: map[string]gateway.Principal{tok: {Tenant: gateway.DefaultTenant, Admin: true}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
	})
	return "http://" + ln.Addr().String(), tok
}
