# Quarters: one entry point for running, testing and checking the workspace.
# `make` alone lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help

QUARTERS_DATA_DIR ?= .devstack
export QUARTERS_DATA_DIR

# Every module of the workspace (the `use` entries of go.work).
MODULES = $(shell go list -m -f '{{.Dir}}')
# The modules that hold Go packages (the tools module only pins tool versions).
CODE_MODULES = $(filter-out $(CURDIR)/tools,$(MODULES))

.PHONY: help run reset test lint proto bench

help: ## List the targets
	@echo "Targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-7s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Start the whole product locally: ingress on $QUARTERS_LISTEN (127.0.0.1:8080), data in $QUARTERS_DATA_DIR
	@mkdir -p "$(QUARTERS_DATA_DIR)/bin"
	@echo "building the dev stack (the first build downloads and compiles its dependencies: a few minutes)"
	@go build -o "$(QUARTERS_DATA_DIR)/bin/devstack" ./tools/devstack
	@exec "$(QUARTERS_DATA_DIR)/bin/devstack"

reset: ## Delete the dev stack's data ($QUARTERS_DATA_DIR, default .devstack)
	@case "$(QUARTERS_DATA_DIR)" in ""|"/"|"."|"..") echo "refusing to delete QUARTERS_DATA_DIR='$(QUARTERS_DATA_DIR)'"; exit 1;; esac
	rm -rf -- "$(QUARTERS_DATA_DIR)"

test: ## Run the tests of every workspace module (go test -count=1 ./... in each)
	@failed=(); \
	for dir in $(CODE_MODULES); do \
		echo "==> $${dir#$(CURDIR)/}"; \
		(cd "$$dir" && go test -count=1 ./...) || failed+=("$${dir#$(CURDIR)/}"); \
	done; \
	if (( $${#failed[@]} )); then echo "FAILED: $${failed[*]}"; exit 1; fi; \
	echo "all modules passed"

lint: ## gofmt, go vet of every module, buf lint of proto-events
	@unformatted=$$(gofmt -l $(MODULES)); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@failed=(); \
	for dir in $(CODE_MODULES); do \
		echo "==> go vet $${dir#$(CURDIR)/}"; \
		(cd "$$dir" && go vet ./...) || failed+=("$${dir#$(CURDIR)/}"); \
	done; \
	if (( $${#failed[@]} )); then echo "go vet FAILED: $${failed[*]}"; exit 1; fi
	go tool buf lint proto-events

proto: ## Generate the event code from proto-events with buf
	cd proto-events && go tool buf generate

bench: ## Go benchmarks of every module, then the load benchmarks of the catalog and the ingress (wrk, nginx)
	@failed=(); \
	for dir in $(CODE_MODULES); do \
		echo "==> $${dir#$(CURDIR)/}"; \
		(cd "$$dir" && go test -run='^$$' -bench=. -benchmem ./...) || failed+=("$${dir#$(CURDIR)/}"); \
	done; \
	if (( $${#failed[@]} )); then echo "FAILED: $${failed[*]}"; exit 1; fi
	tools/devstack/bench/catalog.sh
	tools/devstack/bench/ingress.sh
