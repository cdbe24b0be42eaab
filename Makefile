# pinbot: `make run` starts the bot (or, without DISCORD_TOKEN, the local
# sandbox), `make test` is what CI runs.

GO        ?= go
# FUZZTIME, when set (e.g. 60s or 500000x), replaces every target's budget.
FUZZTIME  ?=
# The data directory of make run: DATA when given (make run DATA=DIR),
# else PINBOT_DATA_DIR from the environment, else ./data, as pinbot
# itself defaults. make demo runs on DEMO_DATA, DIR/demo of that one by
# default: the demo's made-up accounts and pins stay out of the sandbox's
# counts.
DATA      ?= $(or $(PINBOT_DATA_DIR),./data)
DEMO_DATA ?= $(DATA)/demo

# Fuzz targets: package:Target:budget, each a few seconds on the
# reference machine. Budgets are execution counts, not durations: with a
# duration, Go 1.26's fuzzing coordinator sometimes reports its own
# deadline as a failure ("context deadline exceeded", golang/go#75804),
# which a count never arms.
FUZZ_TARGETS := ./actors:FuzzLedger:2000x ./actors:FuzzLedgerRules:2000x ./persistence/codec:FuzzDecode:30000x ./persistence/badgerstore:FuzzTail:30000x ./persistence/seglog:FuzzRecovery:5000x \
	./bot/pinterest:FuzzResetAt:60000x ./bot/pinterest:FuzzParseErrorBody:50000x \
	./bot:FuzzParseMessageRefs:30000x ./bot/internal/fastjson:FuzzDecodersAgree:60000x

.PHONY: run run-cluster soak-cluster demo pinbot test test-deps tree vet unit gateway fuzz bench bench-deps browser-deps bench-engine bench-bot soak build image container-test container-deps systemd-deps etcd-deps

# With DISCORD_TOKEN set: the bot. Without: the local sandbox (stand-ins of
# Discord and Pinterest on loopback, the real bot, a console).
#
# On a terminal, run and demo start bin/pinbot in a process group of its
# own that holds the terminal (set -m): Ctrl-C reaches pinbot alone, which
# stops cleanly, and make ends with pinbot's status instead of dying of
# the same SIGINT (status 130). `|| exit` keeps a shell from replacing
# itself with pinbot, which would leave job control out.
JOBCONTROL := if [ -t 0 ]; then set -m; fi;
run: pinbot
	@$(JOBCONTROL) bin/pinbot --data-dir $(DATA) || exit $$?

# A cluster on this machine (cmd/devcluster): three etcd members inside
# devcluster, the stand-ins of Discord and Pinterest, and three pinbot
# processes, members of the cluster, with a console to pin and to kill,
# pause, stop and start members. Its files, logs included, are in
# DATA/cluster, made afresh at each run.
run-cluster: pinbot
	@$(GO) build -o bin/devcluster ./cmd/devcluster
	@$(JOBCONTROL) bin/devcluster --pinbot bin/pinbot --dir $(DATA)/cluster || exit $$?

# The engine alone, in an interactive demo, on DEMO_DATA.
demo: pinbot
	@$(JOBCONTROL) bin/pinbot --data-dir $(DEMO_DATA) demo || exit $$?

# bin/pinbot for run and demo, announced: a first build takes a minute or
# two, and says nothing while it compiles.
pinbot:
	@echo "building pinbot (the first build takes a minute or two)..."
	@$(GO) build -o bin/pinbot ./cmd/pinbot

build:
	$(GO) build -o bin/pinbot ./cmd/pinbot

# The container image of docs/deploy/Containerfile (pulls golang from
# Docker Hub). IMAGE names it.
IMAGE ?= pinbot
image:
	podman build -f docs/deploy/Containerfile -t $(IMAGE) .

# Builds the Containerfile's runtime stage around a binary built here and
# runs the bot in it between the stand-ins (podman and root needed). make
# test runs it too, in its gateway step. CONTAINERS_CONF names podman's
# configuration: .ci/containers.conf picks runc and lower rlimits, which
# the CI sandbox needs (its crun may not raise rlimits, its cgroups are
# v1); set it empty to use podman's defaults.
CONTAINERS_CONF ?= $(CURDIR)/.ci/containers.conf
container-test: container-deps
	CONTAINERS_CONF=$(CONTAINERS_CONF) PINBOT_CONTAINER_TEST=1 $(GO) test -count=1 -v -run '^TestDisgoGatewayContainer$$' ./cmd/pinbot/

test: test-deps tree vet unit gateway fuzz

# No tracked executable binary or file over 5 MB (.ci/check-tree).
tree:
	bash .ci/check-tree

# What the tests need beyond Go: redis-server, for the smoke run of the
# Redis comparison in cmd/pinbench; Chromium, for the browser tests of
# the /admin dashboard and the link confirmation page; podman and runc,
# for the container image's test; systemd-analyze, to verify the systemd
# unit; Debian's etcd server, to test the etcd client against it
# (PINBOT_REQUIRE_REDIS=1, PINBOT_REQUIRE_CHROMIUM=1,
# PINBOT_REQUIRE_ETCD=1 and PINBOT_CONTAINER_TEST=1 below make those
# tests fail rather than skip when one is missing).
test-deps: bench-deps browser-deps container-deps systemd-deps etcd-deps

# redis-server from Debian's packages (needs root and apt-get).
bench-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 || { echo "redis-server is missing and apt-get is not available: install redis-server" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null; }

# Debian's chromium (needs root and apt-get), driven headless by the
# browser tests in internal/dashboard and bot/web.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 || { echo "chromium is missing and apt-get is not available: install chromium" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

# podman and runc from Debian's packages (needs root and apt-get).
container-deps:
	@{ command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1; } || { \
		command -v apt-get >/dev/null 2>&1 || { echo "podman or runc is missing and apt-get is not available: install podman and runc" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null; }

# systemd-analyze, from Debian's systemd package (needs root and apt-get).
systemd-deps:
	@command -v systemd-analyze >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 || { echo "systemd-analyze is missing and apt-get is not available: install systemd" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null; }

# Debian's etcd-server, /usr/bin/etcd (needs root and apt-get): the
# tests run clusters of its processes on free loopback ports, never on
# 2379 and 2380, where the package's own service may listen.
etcd-deps:
	@test -x /usr/bin/etcd || { \
		command -v apt-get >/dev/null 2>&1 || { echo "/usr/bin/etcd is missing and apt-get is not available: install etcd-server" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null; }

# cmd/pinbench is a module of its own (its go-redis and gonum stay out of
# pinbot's go.mod): vet and unit cover it beside the main module. vet
# first fails on any Go file gofmt would change.
vet:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:" $$out >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) -C cmd/pinbench vet ./...

unit:
	PINBOT_REQUIRE_CHROMIUM=1 PINBOT_REQUIRE_ETCD=1 $(GO) test -race -count=1 ./...
	PINBOT_REQUIRE_REDIS=1 $(GO) -C cmd/pinbench test -race -count=1 ./...

# Tests that open a real disgo gateway connection (in-process, or in a
# child process built from the test binary) run without -race: disgo
# v0.19.6's gateway CloseWithCode races with its own heartbeat goroutine
# (upstream, not ours), so under -race they would fail on disgo's code.
# They are built with `//go:build !race` and named TestDisgoGateway*; the
# -race run above skips them, this one runs only them.
gateway:
	CONTAINERS_CONF=$(CONTAINERS_CONF) PINBOT_CONTAINER_TEST=1 $(GO) test -count=1 -parallel 16 -run '^TestDisgoGateway' ./bot/... ./internal/app/ ./internal/sandbox/ ./cmd/pinbot/

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		budget=$${FUZZTIME:-$$budget}; \
		echo "fuzz $$pkg $$name ($$budget)"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$$budget $$pkg; \
	done

# pinbot against a Redis sorted-set log (appendfsync always and everysec),
# x/time/rate and the bare actor round trip: same machine, workload and
# run. First closed loop (10 s per system), then every system paced at half
# of Redis always's closed-loop maximum, measured again at the start of that
# run (60 s per system, latency from each decision's scheduled instant):
# about 8 minutes in all. Results and the machine are in docs/benchmarks.md.
# pinbench runs in its own module, from cmd/pinbench: paths given to it are
# absolute.
bench: bench-deps
	$(GO) -C cmd/pinbench run . compare --plot $(CURDIR)/docs/bench
	$(GO) -C cmd/pinbench run . compare --rate 0.5xredis-always --plot $(CURDIR)/docs/bench

# The engine's Go benchmarks.
bench-engine:
	$(GO) test -run='^$$' -bench=. -benchmem ./actors ./persistence/...

# The bot under a burst: 1,000 concurrent /pin against the stand-ins.
bench-bot:
	$(GO) test -run='^$$' -bench=BenchmarkPin1000Guilds -benchtime=5x ./bot

# SOAK_CYCLES SIGKILL cycles under load, then a run where the disk fills up
# (a tmpfs when root can mount one, else an injected store fault); then
# BOT_SOAK_CYCLES SIGKILL cycles of the whole bot between the stand-ins,
# with /pin batches in flight and queued pins due, some during a shutdown
# right after a start (`make gateway` runs 4; 24 or more make at least
# 20 kills with queued pins due).
SOAK_CYCLES ?= 100
BOT_SOAK_CYCLES ?= 24
soak:
	$(GO) -C cmd/pinbench run . soak --cycles $(SOAK_CYCLES)
	$(GO) -C cmd/pinbench run . soak --disk-full
	PINBOT_BOT_SOAK_CYCLES=$(BOT_SOAK_CYCLES) $(GO) test -count=1 -run '^TestDisgoGatewayCrashSoak$$' -v ./cmd/pinbot/

# CLUSTER_CYCLES cycles of the cluster scenarios (TestDisgoGatewayCluster:
# three pinbot processes over three etcd members, a fault each cycle:
# SIGKILL, SIGSTOP past the lease, SIGTERM, the etcd leader lost, etcd's
# majority lost). `make gateway` runs one cycle of each.
CLUSTER_CYCLES ?= 100
soak-cluster:
	PINBOT_CLUSTER_SOAK_CYCLES=$(CLUSTER_CYCLES) $(GO) test -count=1 -timeout 150m -run '^TestDisgoGatewayCluster$$' -v ./cmd/pinbot/
