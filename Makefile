# ratelab — every target runs on a fresh machine with Go 1.26, gcc, make, git
# and curl: the module cache and the pinned tools are fetched by go itself.

GO ?= go
PKGS := ./...

.PHONY: all test fmt-check vet staticcheck cross test-race demo bench

all: test

## test: everything CI checks — formatting, vet, staticcheck, cross-builds, tests under -race
test: fmt-check vet staticcheck cross test-race

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# staticcheck is pinned by the tool directive in go.mod.
staticcheck:
	$(GO) tool staticcheck $(PKGS)

# The stores must at least compile (tests included) where they cannot run.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) vet $(PKGS)

test-race:
	$(GO) test -race -count=1 $(PKGS)

## demo: the main job
demo:
	$(GO) test -count=1 -v -run 'Example|AcrossInstances' ./broken_inmemory ./fixed_filestore

## bench: the file store against the syscall floor and the original's write
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./fixed_filestore
