# ratelab — every target runs on a fresh machine with Go 1.26, gcc, make, git
# and curl: the module cache and the pinned tools are fetched by go itself.

GO ?= go
PKGS := ./...

# -trimpath for every go command make runs — vet, staticcheck's package
# loading, the tests, every build of the command, the docs' copies of the
# repository: the checkout's path stays out of the build cache's keys, so
# each compiles a package once for all of them.
#
# -buildvcs=false: a go build or go run in the checkout (the tests build
# the command there) otherwise runs git status to stamp the binary, and
# git status may take and drop .git/index.lock, which changes the .git
# entry of the root's listing; the tests that read the repository's files
# open that listing, so go test ran them all again on the next make test
# with nothing changed. Nothing reads the stamp.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath -buildvcs=false)

.PHONY: suite-time corelines all test fmt-check tidy-check vet staticcheck cross test-race demo demo-broken demo-fixed demo-race \
	demo-boundary demo-fail demo-check demo-redis demo-db figures serve-broken serve-fixed bench bench-peers docs fuzz mutants detection bin/ratelab

# The demos' workload: enough requests that a pool of 4 shows its 4 × 30.
DEMO_FLAGS ?= -requests 130 -limit 30 -window 1h -workers 4 -concurrency 8
SERVE_FLAGS ?= -model cgi -addr 127.0.0.1:8080

all: test

## test: the suite (CI runs it, then make mutants) — formatting, tidy modules, vet, staticcheck, four other systems type-checked, tests under -race
test: fmt-check tidy-check vet staticcheck cross test-race

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# go.mod and go.sum say exactly what the code imports (bench/peers is a
# module of its own, with the peers it compares against).
tidy-check:
	$(GO) mod tidy -diff
	cd bench/peers && $(GO) mod tidy -diff

# -race: vet compiles every package as go test -race does, staticcheck
# type-checks against that build, and test-race then finds it in the
# build cache: with an empty cache each package is compiled once, not
# once for them and again for the tests
# (go vet took 97 s with an empty cache, 23 s after the race build, on a
# quiet 2-core machine, 2026-12-05). The one file that builds only
# without -race (redis_store/alloc_internal_test.go) make cross
# type-checks and vets, for four other systems.
vet:
	$(GO) vet -race $(PKGS)

# staticcheck is pinned by the tool directive in go.mod; GOFLAGS reaches
# the go list it runs, not the build of the tool.
staticcheck:
	GOFLAGS="$$GOFLAGS -race" $(GO) tool staticcheck $(PKGS)

# The stores must at least pass go vet (tests included) where they are not
# tested here: macOS, FreeBSD and OpenBSD, where flock(2) works, and Windows, where
# the file store says it cannot. crosscheck checks, from source, what a
# go vet per system did: every file that system builds type-checks, no
# function lacks the body the compiler wants, vet's analyzers find
# nothing. go vet compiled the standard library and every dependency four
# more times: with an empty build cache, 940 s of CPU where crosscheck
# takes 120 s (2026-12-02, one run each, on the same busy machine). It
# runs as a test (TestTheModule) that reads every file of the module, so
# that go test keeps its pass until one changes: run again on the same
# sources, it takes a second.
CROSS_TARGETS := darwin/arm64,freebsd/amd64,openbsd/amd64,windows/amd64
cross:
	RATELAB_CROSS=$(CROSS_TARGETS) $(GO) test -run '^TestTheModule$$' ./internal/crosscheck

# -timeout: a guard against a hang, far above what a busy machine takes.
# -vet=off: go vet has just checked every package, tests included. Run
# again with nothing changed, go test keeps each package's passing result
# while every file it opened — the tests that build and run the command
# open the whole repository (internal/sources) — and every variable it
# read are as they were: go clean -testcache forgets them.
#
# The longest packages first (LONG), the longest of all, ./docs, which
# pastes the course twice, beside the others from the start: go test
# starts the packages in the order it is given them, two at a time, and
# a long one started last ran alone at the end — redis_store, which
# mostly waits on its failovers, for the last 50 s of a 448 s run, the
# machine idle (2026-12-07, warm build cache). (Four test binaries at once
# instead of two made the cold run longer: 660 s against 636 s, the docs
# package 525 s against 378 s, on the same quiet machine.)
LONG := ./docs ./harness/cmd/ratelab ./database_lock ./beyond_one_host ./redis_store ./http_host ./mysql_store ./postgres_store
#
# GORACE atexit_sleep_ms=0: a race-built binary sleeps a second as it
# exits, to catch a goroutine's race in that second; every test binary
# would, and every child process it starts (internal/childproc sets the
# same for those).
#
# The command is built first, without -race and without cgo, as the
# tests that run it build it (weave.Build): the docs, http_host, beyond_one_host
# and database_lock each start a go build of it, and go's cache holds a
# package only once it is compiled, so two such builds at once on an
# empty cache can compile the same package twice (a cold build of the
# command took 156 s of CPU). Measured once each, quiet: the tests took
# 643 s cold with it (6933715), 659 s without (83b73ba) — within a run's
# noise.
test-race:
	CGO_ENABLED=0 $(GO) build -o /dev/null ./harness/cmd/ratelab
	GORACE="$$GORACE atexit_sleep_ms=0" $(GO) test -race -vet=off -timeout 60m $(LONG) $(PKGS)

# CGO_ENABLED=0, as weave.Build: a static binary starts faster, and
# starting it is what CGI does for every request (its doc has the figures).
#
# -trimpath keeps the checkout's path out of the binary, and so out of the
# build cache's keys: a second clone (the docs tests make two) builds from
# the cache in seconds instead of compiling every package again.
#
# bin/ratelab is phony: go build itself decides what is stale (every source,
# go.mod, the toolchain, a deleted file) and only touches an up-to-date
# binary, so a changed line is never missed. It runs once per make
# invocation: the sub-makes that demo starts are told RATELAB_BUILT=1 and
# use the binary their parent has just built.
ifeq ($(RATELAB_BUILT),)
bin/ratelab:
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./harness/cmd/ratelab
else
bin/ratelab: ;
endif

## demo: every demonstration; exits non-zero if any observation differs from its claim
demo: demo-broken demo-fixed demo-fail demo-race demo-check demo-boundary
	@if command -v redis-server >/dev/null; then $(MAKE) --no-print-directory RATELAB_BUILT=1 demo-redis; \
	else echo "== demo-redis skipped: redis-server not found (install: apt-get install redis-server)"; fi
	@if bin/ratelab db -check >/dev/null 2>&1; then $(MAKE) --no-print-directory RATELAB_BUILT=1 demo-db; \
	else echo "== demo-db skipped: $$(bin/ratelab db -check 2>&1)"; fi

## demo-broken: the in-memory store under single, pool and cgi — 429 from #31 in single, from #121 in a pool of 4, never under cgi
demo-broken: bin/ratelab
	@echo "== demo-broken: the in-memory limiter under three execution models"
	@bin/ratelab demo -store memory $(DEMO_FLAGS)

## demo-fixed: the file store under the same models — 429 from #31 in all of them
demo-fixed: bin/ratelab
	@echo "== demo-fixed: the flock(2) file store under the same three models"
	@bin/ratelab demo -store file $(DEMO_FLAGS)

## demo-fail: a shared store that cannot answer, under fail-local: the in-memory lesson again
demo-fail: bin/ratelab
	@echo "== demo-fail: fail-local with the shared store out — each process decides alone"
	@bin/ratelab demo -outage local $(DEMO_FLAGS)

## demo-race: lost updates, torn reads and lock-file pitfalls, choreographed across processes
demo-race: bin/ratelab
	@echo "== demo-race: why the file store needs its lock, and how file locks go wrong"
	@bin/ratelab race
	@bin/ratelab schedules

## demo-check: every hit of a run recorded, each history checked for linearizability (porcupine)
demo-check: bin/ratelab
	@echo "== demo-check: which runs some one-at-a-time order of the hits explains"
	@bin/ratelab check

## demo-boundary: the 2 × limit burst at a fixed window's reset, and the algorithms that bound it
demo-boundary: bin/ratelab
	@echo "== demo-boundary: fixed-window edges, measured"
	@bin/ratelab boundary

## demo-redis: two hosts with files let 2 × limit through, Redis holds it; Redis pitfalls
demo-redis: bin/ratelab
	@echo "== demo-redis: beyond one host (starts a private redis-server)"
	@bin/ratelab redis

## demo-db: the database lock — lost updates in SQL, lock rows, two hosts on one database (private MariaDB and PostgreSQL)
demo-db: bin/ratelab
	@echo "== demo-db: the database lock (starts a private mariadbd and postgres)"
	@bin/ratelab db

## figures: regenerate the SVG charts in docs/figures (standard library only)
figures: bin/ratelab
	bin/ratelab boundary -svg docs/figures/window-boundary.svg -weight-svg docs/figures/sliding-weight.svg
	bin/ratelab race -figures docs/figures
	bin/ratelab redis -svg docs/figures/redis-failover.svg
	$(call check-figure,docs/figures/linearizability-pool.svg,-store memory -model pool -clients 1 -hits 8)
	$(call check-figure,docs/figures/linearizability-failover.svg,-store redis -fault failover -clients 1)

# check-figure draws the history of one check run, whose verdict the
# figure shows: not linearizable. check exits 1 for that verdict and for
# an error alike (redis-server not installed), so the figure is replaced
# only when the verdict was printed and the file written.
check-figure = out=$$(bin/ratelab check $(2) -svg $(1).new); s=$$?; printf '%s\n' "$$out"; \
	if test $$s -eq 1 && printf '%s\n' "$$out" | grep -q '^not linearizable: ' && test -s $(1).new; then mv $(1).new $(1); \
	else rm -f $(1).new; echo "make figures: $(1) not made: check $(2) exited $$s, not with the verdict the figure shows (not linearizable)" >&2; exit 1; fi

## serve-broken / serve-fixed: a server to curl in a workshop (Ctrl-C stops it)
serve-broken: bin/ratelab
	bin/ratelab serve -store memory $(SERVE_FLAGS)

serve-fixed: bin/ratelab
	bin/ratelab serve -store file $(SERVE_FLAGS)

## bench: per-hit costs and cross-process throughput, written to docs/performance.md
bench: bin/ratelab
	bin/ratelab bench -o docs/performance.md

## bench-peers: redis_store beside go-redis/redis_rate and ulule/limiter (a module of its own), each target met or not met, to docs/performance-redis.md
bench-peers:
	cd bench/peers && $(GO) run . -o ../../docs/performance-redis.md

## suite-time: make test from a fresh clone with empty caches, then again warm: each step's seconds (.ci/suite-time)
suite-time:
	.ci/suite-time

## corelines: the core of the lesson's packages and their non-test lines (the README's map gives the total)
corelines:
	@$(GO) run ./internal/corelines/cmd/corelines

## docs: weave docs/src/*.md into docs/*.md (code from source regions, output from real runs)
docs:
	$(GO) run ./internal/weave/cmd/weave

## mutants: the checker's own red: bugs made in a copy of the code, each reported not linearizable (CI runs it after make test)
mutants:
	RATELAB_MUTANTS=1 $(GO) test -count=1 -run TestMutantsInTheCode -v ./linearizability

## detection: how often the table finds a missing lock — its pool rows run 300 times on a file store without flock (27 minutes on 2026-12-05; not in CI)
detection:
	RATELAB_DETECTION=300 $(GO) test -count=1 -timeout 3h -run TestDetectionRate -v ./linearizability

FUZZTIME ?= 10s

## fuzz: each fuzz target for FUZZTIME (the seed corpus also runs in make test)
fuzz:
	@for t in ./algorithm:FuzzDecode ./algorithm:FuzzTake ./fixed_filestore:FuzzKeyPath; do \
		echo "== fuzzing $${t#*:} for $(FUZZTIME) …"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*} || exit 1; \
	done
