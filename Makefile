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

.PHONY: help run reset test test-modules lint proto bench images observe quartersctl

help: ## List the targets
	@echo "Targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Start the whole product locally: ingress on $QUARTERS_LISTEN (127.0.0.1:8080), data in $QUARTERS_DATA_DIR
	@mkdir -p "$(QUARTERS_DATA_DIR)/bin"
	@echo "building the dev stack (the first build downloads and compiles its dependencies: a few minutes)"
	@go build -o "$(QUARTERS_DATA_DIR)/bin/devstack" ./tools/devstack
	@exec "$(QUARTERS_DATA_DIR)/bin/devstack"

reset: ## Delete the dev stack's data ($QUARTERS_DATA_DIR, default .devstack)
	@case "$(QUARTERS_DATA_DIR)" in ""|"/"|"."|"..") echo "refusing to delete QUARTERS_DATA_DIR='$(QUARTERS_DATA_DIR)'"; exit 1;; esac
	rm -rf -- "$(QUARTERS_DATA_DIR)"

quartersctl: ## Build the command line (admin API, public API, imports, sync) into bin/quartersctl
	go build -o bin/quartersctl ./tools/quartersctl

test: ## Run the tests of every workspace module, with the embedded stores started once for all of them
	@go run ./tools/devstack/cmd/testdeps -- $(MAKE) --no-print-directory test-modules

test-modules: # The per-module loop of `make test`; expects QUARTERS_TEST_* from testdeps
	@failed=(); \
	for dir in $(CODE_MODULES); do \
		echo "==> $${dir#$(CURDIR)/}"; \
		(cd "$$dir" && go test -count=1 ./...) || failed+=("$${dir#$(CURDIR)/}"); \
	done; \
	if (( $${#failed[@]} )); then echo "FAILED: $${failed[*]}"; exit 1; fi; \
	echo "all modules passed"

lint: ## gofmt, go vet of every module, buf lint of proto-events, helm lint --strict of the charts, Redocly lint of the OpenAPI documents
	@unformatted=$$(gofmt -l $(MODULES)); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@failed=(); \
	for dir in $(CODE_MODULES); do \
		echo "==> go vet $${dir#$(CURDIR)/}"; \
		(cd "$$dir" && go vet ./...) || failed+=("$${dir#$(CURDIR)/}"); \
	done; \
	if (( $${#failed[@]} )); then echo "go vet FAILED: $${failed[*]}"; exit 1; fi
	go tool buf lint proto-events
	cd tools/deploycheck && go test -count=1 -run 'TestHelmLintStrict|TestChart|TestSkaffoldConfig|TestDockerfile' .
	cd pkg/openapi && npx --yes @redocly/cli@2.77.0 lint

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
	tools/devstack/bench/agreements.sh
	tools/devstack/bench/bookings.sh
	tools/devstack/bench/webhooks.sh

# Images: <IMAGE_REGISTRY>/<service>:<IMAGE_TAG>, one per service that exists.
IMAGE_REGISTRY ?= quarters
IMAGE_TAG ?= dev
# buildah (daemonless; vfs storage works without privileges) or docker.
IMAGE_BUILDER ?= $(if $(shell command -v buildah),buildah,docker)
BUILDAH_FLAGS ?= --storage-driver vfs
SERVICES = $(notdir $(patsubst %/main.go,%,$(wildcard services/*/main.go)))

images: ## Build one image per service with $IMAGE_BUILDER (buildah or docker): static binaries packaged FROM scratch
	@mkdir -p bin/image
	@cp /etc/ssl/certs/ca-certificates.crt bin/image/ca-certificates.crt
	@for svc in $(SERVICES); do \
		echo "==> $(IMAGE_REGISTRY)/$$svc:$(IMAGE_TAG)"; \
		(cd services/$$svc && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o ../../bin/image/$$svc .) || exit 1; \
		if [ "$(IMAGE_BUILDER)" = buildah ]; then \
			buildah $(BUILDAH_FLAGS) bud --isolation chroot --target prebuilt --build-arg SERVICE=$$svc -t $(IMAGE_REGISTRY)/$$svc:$(IMAGE_TAG) . || exit 1; \
		else \
			$(IMAGE_BUILDER) build --target prebuilt --build-arg SERVICE=$$svc -t $(IMAGE_REGISTRY)/$$svc:$(IMAGE_TAG) . || exit 1; \
		fi; \
	done

observe: ## Start the dev stack and a Prometheus (Debian package prometheus) scraping it with the alert rules, on $QUARTERS_PROMETHEUS_LISTEN (127.0.0.1:9091)
	@mkdir -p "$(QUARTERS_DATA_DIR)/bin"
	@go build -o "$(QUARTERS_DATA_DIR)/bin/observe" ./tools/deploycheck/cmd/observe
	@exec "$(QUARTERS_DATA_DIR)/bin/observe"
