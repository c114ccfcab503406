# BPC job service. `make` (or `make help`) lists the targets.
# Postgres: scripts/pg.sh uses $DATABASE_URL, else 127.0.0.1:5432 (user postgres, no
# password), else starts a private cluster in .pgdata/ (see the top of scripts/pg.sh).

GO    ?= go
IMAGE ?= bpc:dev

.DEFAULT_GOAL := help
.PHONY: help run demo test chaos fuzz bench build migrate doctor fmt vet lint pg-stop docker-build clean

# Go files of the repo: tracked plus new untracked ones (not ignored); find(1) outside git.
GOFILES = $$( { git ls-files --cached --others --exclude-standard -- '*.go' 2>/dev/null || \
	find . -name '*.go' -not -path './.pgdata/*' -not -path './vendor/*'; } )

help: ## list targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-zA-Z_-]*:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## start Postgres if needed, build, migrate and serve (dev)
	bash scripts/run.sh

demo: ## walk the NMC811 sample through the pipeline over HTTP (BPC_URL, BPC_ADMIN_TOKEN)
	bash scripts/demo.sh

test: ## go vet, go test -race, fuzz, chaos against a database of its own (bpc_test_<random>)
	bash scripts/test.sh

chaos: ## chaos tests: real worker processes killed, Postgres restarted (build tag chaos)
	bash scripts/chaos.sh

# make fuzz runs every fuzz target of FUZZPKGS, one at a time (go test -fuzz takes one
# target), each for FUZZTIME on top of its corpus; make test runs the rules targets briefly.
FUZZTIME ?= 60s
FUZZPKGS ?= ./core/rules

fuzz: ## run each rules fuzz target for FUZZTIME (60s; FUZZPKGS=./core/rules)
	@for pkg in $(FUZZPKGS); do \
		for target in $$($(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz'); do \
			echo "fuzz: $$pkg $$target for $(FUZZTIME)"; \
			bash scripts/fuzz-target.sh $$target $$pkg $(FUZZTIME) || exit 1; \
		done; \
	done

bench: ## benchmarks in ./bench/... (own bpc_bench_<random> db), output in bench-results.txt
	bash scripts/bench.sh

build: ## build bin/bpc
	$(GO) build -o bin/bpc ./cmd/bpc

migrate: build ## apply migrations to the dev database (bpc)
	@url=$$(bash scripts/pg.sh bpc) && DATABASE_URL="$$url" bin/bpc migrate

doctor: build ## check configuration and the dev database
	@url=$$(bash scripts/pg.sh bpc) && DATABASE_URL="$$url" bin/bpc doctor

fmt: ## gofmt -w the Go files
	@files="$(GOFILES)"; [ -z "$$files" ] || gofmt -w $$files

vet: ## go vet ./...
	$(GO) vet ./...

lint: ## fail on unformatted Go files, then go vet
	@files="$(GOFILES)"; [ -z "$$files" ] || { out=$$(gofmt -l $$files); \
	if [ -n "$$out" ]; then echo "gofmt needed (run make fmt):"; echo "$$out"; exit 1; fi; }
	$(GO) vet ./...

pg-stop: ## stop the private Postgres cluster in .pgdata/, if running
	bash scripts/pg.sh --stop

docker-build: ## build the container image (IMAGE=bpc:dev)
	docker build -t $(IMAGE) .

clean: ## remove build output
	rm -rf bin
