# pinbot: `make run` starts the bot (or the local engine demo), `make test`
# is what CI runs.

GO       ?= go
FUZZTIME ?= 5s
DATA     ?= ./data

# Fuzz targets: package:Target. Each runs for FUZZTIME in `make test`.
FUZZ_TARGETS := ./actors:FuzzLedger ./persistence:FuzzDecode \
	./bot/pinterest:FuzzResetAt ./bot/pinterest:FuzzParseErrorBody

.PHONY: run test vet unit gateway fuzz bench build

run:
	$(GO) run ./cmd/pinbot --data-dir $(DATA)

build:
	$(GO) build -o bin/pinbot ./cmd/pinbot

test: vet unit gateway fuzz

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

# Tests that open a real disgo gateway connection run without -race: disgo
# v0.19.6's gateway CloseWithCode races with its own heartbeat goroutine
# (upstream, not ours), so under -race they would fail on disgo's code.
# They are built with `//go:build !race` and named TestDisgoGateway*; the
# -race run above skips them, this one runs only them.
gateway:
	$(GO) test -count=1 -parallel 16 -run '^TestDisgoGateway' ./bot/discordtest/

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# Benchmarks; results and the machine they came from are in docs/benchmarks.md.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./actors ./persistence
