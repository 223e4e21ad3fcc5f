# sandgate: run `make help` for the targets.
.DEFAULT_GOAL := help
GO        ?= go
TEST_TIMEOUT ?= 900s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: help run cluster build test test-go web tools test-web bench fuzz lint fmt check plugins

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: web ## build bin/sandgate with the web UI embedded
	$(GO) build -o bin/sandgate ./cmd/sandgate

run: build ## start one node on 127.0.0.1:7070 with embedded defaults
	./bin/sandgate serve --listen 127.0.0.1:7070 --data ./data

cluster: build ## start 3 nodes on loopback (HTTP 7070/7080/7090, raft 7071/7081/7091, data ./data/cluster); Ctrl-C stops them
	SANDGATE_BIN=bin/sandgate examples/cluster/cluster.sh

test: web test-go test-web ## run every test suite (what CI runs): Go with -race, then the browser tests

# Sandboxes run on the namespace runtime (the default of serve where the kernel allows
# it; the runtime suite is told so, in a user namespace as serve's probe picks here);
# then the runtime suite again and a smoke subset of the gateway's on the local one.
LOCAL_SMOKE := 'TestExec|TestProcess|TestSession|TestTerminal|TestFiles|TestSandbox'
test-go: tools ## go test -race ./... on the namespace runtime, then on the local one (runtime, gateway smoke), then the memory tests without -race
	SANDGATE_TEST_DRIVER=namespace-userns $(GO) test -race -timeout=$(TEST_TIMEOUT) ./...
	SANDGATE_TEST_DRIVER=local SANDGATE_TEST_RUNTIME=local $(GO) test -race -timeout=$(TEST_TIMEOUT) ./runtime/
	SANDGATE_TEST_DRIVER=local SANDGATE_TEST_RUNTIME=local $(GO) test -race -timeout=$(TEST_TIMEOUT) -run $(LOCAL_SMOKE) ./gateway/
	$(GO) test -timeout=$(TEST_TIMEOUT) -run 'TestIdleInitGivesBackMemory|TestFewSpawnsNotCollected|TestSpawnsAllocateNothing' ./runtime/internal/nsinit/ # memory and allocations, measured without -race

web: web/node_modules/.ci-stamp ## build the web UI bundle into gateway/webui/dist (npm ci + esbuild)
	cd web && node build.mjs

# npm ci runs again only when the lock file or package.json is newer than the last install.
web/node_modules/.ci-stamp: web/package-lock.json web/package.json
	cd web && npm ci --no-audit --no-fund
	touch $@

# The third-party tools the Go tests drive (wscat, the OpenCode SDK and ws of
# tools/opencode), pinned by tools/package-lock.json.
tools: tools/node_modules/.ci-stamp ## install the pinned npm tools the Go tests run (npm ci in tools/)

tools/node_modules/.ci-stamp: tools/package-lock.json tools/package.json
	cd tools && npm ci --no-audit --no-fund
	touch $@

test-web: build ## run the browser tests against bin/sandgate (needs /usr/bin/chromium)
	cd web && SANDGATE_BIN=$(CURDIR)/bin/sandgate ARTIFACTS=$(CURDIR)/artifacts node --test --test-concurrency=1 --test-timeout=300000 test/*.test.mjs

bench: ## run the benchmarks that BENCHMARKS.md reports
	$(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 ./runtime/ ./actor/ ./plugins/ ./gateway/

# Each fuzz target of the module in turn, for FUZZTIME. An input that finds new
# coverage is minimized for at most FUZZMIN: some targets write and sync a directory
# per run, and Go's default of a minute per input then leaves little time to fuzz.
FUZZTIME ?= 30s
FUZZMIN  ?= 5s
fuzz: ## run every fuzz target for FUZZTIME (default 30s) each
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $$pkg; \
		done; \
	done

lint: ## go vet and staticcheck
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

check: lint ## what CI checks besides tests: format, tidy, lint, a non-Linux build, clean diff
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) mod tidy
	GOOS=darwin $(GO) build ./...
	git diff --exit-code -- go.mod go.sum

PLUGIN_DIR ?= bin/plugins

plugins: ## build the example policy plugins into bin/plugins (pools needs wabt's wat2wasm)
	mkdir -p $(PLUGIN_DIR)
	cd examples/plugins/tiers && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(CURDIR)/$(PLUGIN_DIR)/tiers.wasm .
	cd examples/plugins/guard && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(CURDIR)/$(PLUGIN_DIR)/guard.wasm .
	wat2wasm -o $(PLUGIN_DIR)/pools.wasm examples/plugins/pools/pools.wat
