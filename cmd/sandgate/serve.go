package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/webui"
)

const serveUsage = `usage: sandgate serve [flags]

Starts a sandgate node. With no flags it serves on 127.0.0.1:7070 with data in ./data,
making a token (kept in the data directory) and printing it.

flags:
`

// repeatWindow is how soon after the first stop signal a second one counts as the same
// request sent twice (timeout(1) signals its child, then the child's process group)
// rather than a request to force the exit. No one presses Ctrl-C twice this fast.
const repeatWindow = 200 * time.Millisecond

// cmdServe parses serve's flags and runs a node until SIGINT or SIGTERM; a second
// signal forces an immediate exit, which kills every process tree first.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed below, in the client commands' style
	printUsage := func(w io.Writer) {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		// Show flags as the docs spell them (--listen); Go's flag package accepts both.
		fmt.Fprint(w, serveUsage+strings.ReplaceAll("\n"+b.String(), "\n  -", "\n  --")[1:])
	}
	// usageError reports a bad command line as every subcommand does: the message,
	// then the usage, on stderr, and exit code 125.
	usageError := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "sandgate serve: "+format+"\n", args...)
		printUsage(stderr)
		return exitSandgate
	}
	listen := fs.String("listen", "127.0.0.1:7070", "HTTP `address`")
	data := fs.String("data", "./data", "data `directory`: actor storage and workspaces")
	token := fs.String("token", os.Getenv("SANDGATE_TOKEN"), "API `token` (also $SANDGATE_TOKEN); required unless --listen is loopback")
	tokens := fs.String("tokens", "", "JSON `file` mapping tokens to tenants: a value is a tenant name, or {\"tenant\": NAME, \"admin\": true} for an operator (--token is always an admin of tenant \"default\")")
	maxPerTenant := fs.Int("max-sandboxes-per-tenant", gateway.DefaultMaxSandboxesPerTenant, "how many sandboxes one tenant may have (`N`); 0 means no limit")
	maxExited := fs.Int("max-exited-processes", gateway.DefaultExitedLimit, "how many exited processes' records (`N`) a sandbox keeps listed; past it the oldest is dropped")
	maxSessions := fs.Int("max-sessions", gateway.DefaultSessionLimit, "how many sessions (`N`) a sandbox remembers, dead ones included; a new one past it is 429 budget_exceeded (max_sessions)")
	maxTerminals := fs.Int("max-terminals", gateway.DefaultTerminalLimit, "how many terminals (`N`) a sandbox remembers, stopped ones included; a new one past it is 429 budget_exceeded (max_terminals)")
	nodeID := fs.String("node-id", "", "node `id`: 1-63 characters of [a-z0-9_-], kept in --data (default: the kept one, or a UUID made once); another id than the kept one is refused")
	raftListen := fs.String("raft-listen", "127.0.0.1:7071", "raft `address`")
	advertise := fs.String("advertise", "", "HTTP `host:port` (or host, with the --listen port) other nodes forward to (default: --listen, or for 0.0.0.0/:: the host's first non-loopback address)")
	raftAdvertise := fs.String("raft-advertise", "", "raft `host:port` (or host, with the --raft-listen port) other nodes dial (default: --raft-listen, or for 0.0.0.0/:: the host's first non-loopback address)")
	join := fs.String("join", "", "HTTP `address` (host:port or http://host:port) of any cluster member to join, with an admin --token the cluster accepts; a node that has joined once resumes from --data without it")
	deadServer := fs.Duration("dead-server-timeout", gateway.DefaultDeadServerTimeout, "how long a cluster member may be gone (`duration`) before the leader removes it from the raft configuration, a non-voter taking a dead voter's seat; negative disables")
	labels := fs.String("labels", "", "node labels `k=v,...` for routing policy")
	policy := fs.String("policy", "", "policy plugin `file` (.wasm), reloaded when it changes")
	policyConfig := fs.String("policy-config", "", "`file` of configuration bytes for the plugin's init")
	budget := fs.String("budget", "", "JSON `file` of the operator's budget defaults and maxima: {\"default\": {...}, \"max\": {...}} with the budget object's fields")
	runtimeName := fs.String("runtime", "", "execution runtime `driver`: namespace (each sandbox in its own namespaces and cgroups; the default where the kernel allows it) or local (host processes as this user, for development)")
	rootfs := fs.String("rootfs", "", "read-only root `directory` of the namespace runtime's sandboxes (default: the host's /usr, /etc, /opt, read-only)")
	network := fs.String("sandbox-network", "", "a sandbox's network unless the policy grants another: none, loopback (the default) or host")
	diskImages := fs.Bool("disk-images", true, "enforce budgets' disk_bytes with an ext4 image per sandbox mounted on its workspace (needs root, loop devices and mkfs.ext4; where they are missing the server says so at start and runs without quotas)")
	moveMax := fs.Int64("workspace-move-max", gateway.DefaultWorkspaceMoveMax, "how many `bytes` of files a workspace may hold to move with its sandbox in a drain or rebalance; a larger one stays behind and its sandbox.moved says the workspace was lost; negative moves none")
	metricsListen := fs.String("metrics-listen", "", "`address` to serve /metrics on without a token, for Prometheus (default: only on --listen, with a token)")
	origins := fs.String("allowed-origins", "", "extra `hosts` (comma-separated, * wildcards) whose pages may open WebSockets; pages of the --listen address (and, for a loopback one, localhost, 127.0.0.1 and [::1] on its port) always may, and a server listening on all interfaces allows only these")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return 0
		}
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if *runtimeName != "" && *runtimeName != gateway.RuntimeNamespace && *runtimeName != gateway.RuntimeLocal {
		return usageError("unknown runtime %q (namespace or local)", *runtimeName)
	}

	nodeLabels, err := parseLabels(*labels)
	if err != nil {
		fmt.Fprintln(stderr, "sandgate serve:", err)
		return exitSandgate
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := &gateway.Config{
		Listen: *listen, DataDir: *data, NodeID: *nodeID, RaftListen: *raftListen, Join: *join,
		Advertise: *advertise, RaftAdvertise: *raftAdvertise,
		Labels: nodeLabels, Logger: log, UI: webui.Handler(), Runtime: *runtimeName, Rootfs: *rootfs,
		SandboxNetwork: *network, DiskImages: *diskImages, DeadServerTimeout: *deadServer,
		WorkspaceMoveMax: *moveMax,
	}
	if *policyConfig != "" && *policy == "" {
		fmt.Fprintln(stderr, "sandgate serve: --policy-config needs --policy")
		return exitSandgate
	}
	if *origins != "" {
		cfg.AllowedOrigins = strings.Split(*origins, ",")
	}
	cfg.PolicyFile = *policy
	if *policyConfig != "" {
		if cfg.PolicyConfig, err = os.ReadFile(*policyConfig); err != nil {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			return exitSandgate
		}
	}
	if *budget != "" {
		bs, err := gateway.LoadBudgets(*budget)
		if err != nil {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			return exitSandgate
		}
		cfg.Defaults, cfg.Limits = bs.Default, bs.Max
	}

	if cfg.Tokens, err = gateway.ServeTokens(*token, *tokens); err != nil {
		fmt.Fprintln(stderr, "sandgate serve:", err)
		return exitSandgate
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"--max-exited-processes", *maxExited}, {"--max-sessions", *maxSessions}, {"--max-terminals", *maxTerminals}} {
		if f.n < 1 {
			fmt.Fprintf(stderr, "sandgate serve: %s must be 1 or more, not %d\n", f.name, f.n)
			return exitSandgate
		}
	}
	cfg.ExitedLimit, cfg.SessionLimit, cfg.TerminalLimit = *maxExited, *maxSessions, *maxTerminals
	switch {
	case *maxPerTenant < 0:
		fmt.Fprintf(stderr, "sandgate serve: --max-sandboxes-per-tenant must be 0 (no limit) or more, not %d\n", *maxPerTenant)
		return exitSandgate
	case *maxPerTenant == 0:
		cfg.MaxSandboxesPerTenant = -1 // Config's "no limit"; its 0 is the default
	default:
		cfg.MaxSandboxesPerTenant = *maxPerTenant
	}
	return serve(ctx, cfg, *metricsListen, stdout, stderr)
}

// serve runs a node with cfg until ctx ends or a stop signal comes; with metricsAddr it
// also serves /metrics there without a token.
func serve(ctx context.Context, cfg *gateway.Config, metricsAddr string, stdout, stderr io.Writer) int {
	madeToken := ""
	if len(cfg.Tokens) == 0 && gateway.IsLoopback(cfg.Listen) {
		tok, err := gateway.LoadOrCreateToken(cfg.DataDir)
		if err != nil {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			return 1
		}
		cfg.Tokens = map[string]gateway.Principal{tok: {Tenant: gateway.DefaultTenant, Admin: true}}
		madeToken = tok
	}
	// A --listen port of 0 is bound first, so that the node advertises the real port
	// to the cluster; any other is bound once the node is ready, as before.
	var ln net.Listener
	asked := cfg.Listen // what --listen said, for the lines that name the address
	if _, port, err := net.SplitHostPort(cfg.Listen); err == nil && port == "0" {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			return 1
		}
		cfg.Listen = ln.Addr().String()
	}
	srv, err := gateway.New(ctx, cfg)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		fmt.Fprintln(stderr, "sandgate serve:", err)
		if errors.Is(err, gateway.ErrAdvertise) || errors.Is(err, gateway.ErrConfig) {
			return exitSandgate // a bad flag, as for the flags parsed here
		}
		return 1
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			_ = srv.Shutdown(context.Background())
			return 1
		}
	}
	var metricsLn net.Listener
	if metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", metricsAddr); err != nil {
			fmt.Fprintln(stderr, "sandgate serve: --metrics-listen:", err)
			ln.Close()
			_ = srv.Shutdown(context.Background())
			return 1
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	stopHups := make(chan struct{})
	defer func() { signal.Stop(hups); close(stopHups) }()
	go func() {
		for {
			select {
			case <-hups:
				if err := srv.ReloadPolicy(context.Background()); err != nil {
					cfg.Logger.Error("policy reload failed; keeping the running plugin", "err", err)
				}
			case <-stopHups:
				return
			}
		}
	}()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	metricsServed := make(chan struct{})
	if metricsLn != nil {
		go func() {
			defer close(metricsServed)
			if err := srv.ServeMetrics(metricsLn); !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("metrics listener failed", "err", err)
			}
		}()
	} else {
		close(metricsServed)
	}
	if madeToken != "" {
		fmt.Fprintf(stdout, "token: %s (kept in %s/token)\n", madeToken, cfg.DataDir)
		if webui.Available() {
			fmt.Fprintf(stdout, "dashboard: http://%s/?token=%s\n", shownAddr(ln.Addr(), asked), madeToken)
		}
	}
	if metricsLn != nil {
		fmt.Fprintf(stdout, "metrics: http://%s/metrics (no token)\n", metricsLn.Addr())
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", shownAddr(ln.Addr(), asked))

	var stopping time.Time
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "sandgate serve:", err)
			_ = srv.Shutdown(context.Background())
			<-metricsServed
			return 1
		}
		<-metricsServed
		return 0
	case <-ctx.Done():
	case sig := <-sigs:
		// The repeat window starts before the log line, so whoever reads the line
		// knows the window has begun.
		stopping = time.Now()
		cfg.Logger.Info("shutting down", "signal", sig.String())
	}
	if stopping.IsZero() {
		stopping = time.Now()
	}
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- srv.Shutdown(sctx)
	}()
	for {
		select {
		case err := <-done:
			<-served
			<-metricsServed
			if err != nil {
				fmt.Fprintln(stderr, "sandgate serve: shutdown:", err)
				return 1
			}
			return 0
		case sig := <-sigs:
			if time.Since(stopping) < repeatWindow {
				continue
			}
			fmt.Fprintf(stderr, "sandgate serve: %s again: killing every process and exiting now\n", sig)
			srv.Abort()
			return 130
		}
	}
}

func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--labels: want k=v,..., got %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

// shownAddr is the address serve says it listens on: the listener's, except that a
// listener on every interface (an unspecified IP, which Go reports as [::] for
// 0.0.0.0 too) is shown with the host --listen gave (0.0.0.0 when it gave none), so
// the line names what the operator asked for, with the port actually bound.
func shownAddr(a net.Addr, listen string) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}
