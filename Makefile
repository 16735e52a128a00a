# rostrum — build, run and test. `make run` and `make test` are all a newcomer needs.
GO        ?= go
BIN       ?= bin/rostrum
DEV_BIN   ?= bin/rostrum-dev
PKGS      ?= ./...
FUZZTIME  ?= 2m
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: docs openapi-lint tidy test-race bench-curve all build run test test-short deps deps-browser bench bench-micro fuzz lint vet fmt clean screenshot chaos soak

all: build

## build: bin/rostrum, what operators deploy, and bin/rostrum-dev, the developer tools (the
## benchmarks, the meeting simulator), which releases and the container image leave out.
build:
	$(GO) build -o $(BIN) ./cmd/rostrum
	$(GO) build -o $(DEV_BIN) ./cmd/rostrum-dev

## run: the main job on an embedded default (see README "Quick start").
run: deps build
	./$(BIN) demo

## deps: install the servers the integration tests run against (redis-server, redis-cli,
## redis-sentinel), and luacheck, which `make lint` runs over the Lua scripts.
deps:
	@command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1 || { \
	  echo "installing redis-server and redis-sentinel (needed by the integration tests)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools redis-sentinel; }
	@command -v luacheck >/dev/null 2>&1 || { \
	  echo "installing luacheck (needed by make lint)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq lua-check; }

## deps-browser: Debian's chromium, for the browser test and `make screenshot`.
deps-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (needed by the browser test)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

## screenshot: render the live page into docs/screenshot.png.
screenshot: deps-browser
	ROSTRUM_SCREENSHOT=$(CURDIR)/docs/screenshot.png $(GO) test ./web -run '^TestScreenshot$$' -count=1 -v

## test: every test, against a real redis-server and an in-process Kafka broker (a 45-second soak
## among them: internal/testkit/soak, the path of `make soak`); then each micro-benchmark of bench-micro
## once, so that a benchmark that no longer runs fails here.
MICRO_BENCH = 'Decode|Fold|Layout|Meeting|Merge|Append|Replay|PlanRoom|Callback'
MICRO_PKGS = ./codec ./processor ./sink ./stability ./wal ./gateway
test: deps vet
	$(GO) test -count=1 -timeout 20m $(PKGS)
	$(GO) test -count=1 -run '^$$' -bench $(MICRO_BENCH) -benchtime 1x $(MICRO_PKGS)
	$(MAKE) --no-print-directory kubecheck

## chaos: the full fault schedules, with rostrum run's defaults (about 100 faults over a
## 300,000-record trace and 60,000 board records), with --stability merge and with
## --pipeline-batches without boards (half that each); short ones run in `make test`. CHAOS_SEED
## picks another schedule.
CHAOS_SEED ?= 6
chaos: deps
	ROSTRUM_CHAOS=full ROSTRUM_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -timeout 25m -run '^TestChaos$$' -v ./internal/testkit/chaos

## soak: the gateway, three processors and the leaderboards for SOAK_MINUTES at half the flat-out
## rate through the gateway, a fault every few minutes; prints lost / applied twice and the slope of
## RSS, goroutines, open files, Redis memory, WAL size and lag, writes the samples to SOAK_CSV and a
## chart to SOAK_CHART (docs/RELIABILITY.md "Soak"; `make soak SOAK_CHART=docs/soak.svg SOAK_CSV=docs/soak.csv`
## redraws its chart and samples). SOAK_MINUTES is at most 150; `make test` runs a 45-second one.
SOAK_MINUTES ?= 30
SOAK_CSV     ?= bin/soak.csv
SOAK_CHART   ?= bin/soak.svg
soak: deps build
	ROSTRUM_SOAK_BIN=$(CURDIR)/$(BIN) ROSTRUM_SOAK_MINUTES=$(SOAK_MINUTES) \
	ROSTRUM_SOAK_CSV=$(abspath $(SOAK_CSV)) ROSTRUM_SOAK_CHART=$(abspath $(SOAK_CHART)) \
	  $(GO) test -count=1 -timeout $$(( $(SOAK_MINUTES) + 30 ))m -run '^TestSoak$$' -v ./internal/testkit/soak

## test-race: the short suites of the packages with concurrency, under the race detector.
RACE_PKGS ?= ./processor ./sink ./web ./board ./stability ./wal ./metrics ./codec ./ranking ./auth ./route ./gateway ./control ./internal/redisscript
test-race: deps
	$(GO) test -race -short -count=1 -timeout 15m $(RACE_PKGS)

test-short: deps
	$(GO) test -count=1 -short $(PKGS)

## docs: regenerate the flag reference in docs/configuration.md and the config file's JSON Schema,
## docs/config.schema.json, from the binary's flags (TestConfigReferenceCurrent and
## TestConfigSchemaCurrent fail when they are out of date).
docs:
	@mkdir -p bin
	$(GO) run ./cmd/rostrum help config --markdown > bin/config.md.gen
	awk -v gen=bin/config.md.gen '/^<!-- BEGIN GENERATED/ {print; while ((getline l < gen) > 0) print l; skip=1; next} \
	  /^<!-- END GENERATED/ {skip=0} !skip' docs/configuration.md > bin/configuration.md && mv bin/configuration.md docs/configuration.md
	$(GO) run ./cmd/rostrum help config --schema > bin/config.schema.json && mv bin/config.schema.json docs/config.schema.json

## tidy: fails when go.mod or go.sum are not what `go mod tidy` makes of them.
tidy:
	$(GO) mod tidy -diff

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags docker $(PKGS)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## lint: vet, staticcheck, luacheck over every .lua file (settings in .luacheckrc), and Redocly's
## recommended rules over docs/openapi.yaml (openapi-lint).
lint: deps vet tidy openapi-lint
	luacheck --formatter plain .
	$(GO) run $(STATICCHECK) $(PKGS)

## openapi-lint: Redocly CLI (the version pinned in tools/openapi/package-lock.json) lints
## docs/openapi.yaml with its recommended rules (tools/openapi/redocly.yaml; deliberate exceptions in
## tools/openapi/.redocly.lint-ignore.yaml) and fails on any error. No network: telemetry and the
## update check are off.
REDOCLY = tools/openapi/node_modules/@redocly/cli/bin/cli.js
openapi-lint: $(REDOCLY)
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	  node $(REDOCLY) lint --config tools/openapi/redocly.yaml docs/openapi.yaml

## The linter's install: node and npm (Debian's when missing; Redocly CLI 2 needs Node.js 20.19+ or
## 22.12+), then `npm ci` of the lock file into the git-ignored tools/openapi/node_modules (npm
## registry only, no install scripts); again only when the lock file changes.
$(REDOCLY): tools/openapi/package.json tools/openapi/package-lock.json
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs and npm (needed by make lint)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm; }
	@node -e 'const [a, b] = process.versions.node.split(".").map(Number); if (!(a == 20 && b >= 19 || a == 22 && b >= 12 || a > 22)) { console.error("make lint: Redocly CLI needs Node.js 20.19+ or 22.12+, not " + process.version); process.exit(1) }'
	cd tools/openapi && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

## bench: every Go benchmark, then `rostrum-dev bench`: the full pipeline against the naive
## design and the Redis ceiling (docs/PERFORMANCE.md).
bench: deps build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	./$(DEV_BIN) bench --events 200000 --rate-seconds 3 --rate-warmup 1 --naive-seconds 5

## bench-curve: latency and CPU per event against the offered load, drawn into docs/latency-curve.svg.
bench-curve: deps build
	./$(DEV_BIN) bench --modes rostrum --events 1000000 --rates 0.1,0.25,0.5,0.75,0.9 --rate-seconds 5 --rate-warmup 2 --chart docs/latency-curve.svg

## bench-micro: the hot-path micro-benchmarks, benchstat-friendly (-count 6).
bench-micro:
	$(GO) test -run '^$$' -bench $(MICRO_BENCH) -benchmem -count 6 $(MICRO_PKGS)

## fuzz: run each fuzz target for FUZZTIME.
fuzz:
	$(GO) test ./codec -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./wal -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME)
	$(GO) test ./processor -run '^$$' -fuzz '^FuzzDecodeFold$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gateway -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gateway -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME)

fmt:
	gofmt -w .

clean:
	rm -rf bin dist

## release: versioned static binaries for linux/amd64 and linux/arm64, each in
## dist/rostrum-$(VERSION)-linux-<arch>.tar.gz with LICENSE and README.md, and dist/SHA256SUMS.
## A release ships rostrum only: rostrum-dev (benchmarks, simulator) is built from source.
## VERSION is required (v1.2.3 or v1.2.3-rc.1); the version, the commit and the build time are
## stamped with -X (`rostrum version` prints them, VCS stamping or not). docs/operations.md "Releases".
RELEASE_ARCHS ?= amd64 arm64
REVISION      ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
# Read once, so that the stamp and the archives' file times agree.
BUILD_TIME_NOW := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILD_TIME    ?= $(BUILD_TIME_NOW)
RELEASE_LDFLAGS = -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.buildTime=$(BUILD_TIME)
.PHONY: release
release:
	@echo '$(VERSION)' | grep -Eq '^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$$' || \
	  { echo "make release: VERSION must look like v1.2.3 or v1.2.3-rc.1, not '$(VERSION)'"; exit 1; }
	@test -n "$(REVISION)" || { echo "make release: no git revision (set REVISION=<commit>)"; exit 1; }
	rm -rf dist && mkdir -p dist
	set -e; for arch in $(RELEASE_ARCHS); do \
	  name=rostrum-$(VERSION)-linux-$$arch; mkdir -p dist/$$name; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "$(RELEASE_LDFLAGS)" -o dist/$$name/rostrum ./cmd/rostrum; \
	  cp LICENSE README.md dist/$$name/; \
	  tar -C dist --sort=name --owner=0 --group=0 --numeric-owner --mtime='$(BUILD_TIME)' \
	    -czf dist/$$name.tar.gz $$name; \
	  rm -rf dist/$$name; \
	done
	cd dist && sha256sum rostrum-$(VERSION)-linux-*.tar.gz > SHA256SUMS
	@cat dist/SHA256SUMS

## docker-pin: resolve the tags of deployments/Dockerfile's base images again and pin them to
## today's digests (docker buildx and registry access needed; review the diff, then commit it).
.PHONY: docker-pin
docker-pin:
	sh tools/docker-pin.sh deployments/Dockerfile

## kubecheck: lint and render the Helm chart (deployments/helm/rostrum) and build the kustomize base and
## overlays with Helm's and kustomize's own Go packages, then validate every object offline: built-in
## kinds strictly against the Kubernetes API types, custom resources against the CRD schemas of the
## Prometheus Operator and KEDA (from their Go modules, pinned), and the references between objects.
## tools/kubecheck is a Go module of its own: rostrum's go.mod has no Kubernetes dependency.
.PHONY: kubecheck
kubecheck:
	cd tools/kubecheck && $(GO) test -count=1 ./...
