# Tiler — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/tiler
# The developer binary: the harnesses that start a local control plane (demo, fidelity), kept out of
# the controller image.
DEVBIN := bin/tiler-dev
# Control-plane binaries (kube-apiserver, kube-scheduler, kube-controller-manager, etcd) are built
# once from the Go module proxy into this cache and reused by tests and the demo.
TILER_CONTROLPLANE_DIR ?= $(HOME)/.cache/tiler/controlplane/v1.37.2
export TILER_CONTROLPLANE_DIR

# The Helm chart's tests (lint, template, install and rollout on the local control plane) are a Go
# module of their own, so that Helm's dependencies stay out of the product's go.mod.
CHART_TEST := deploy/chart/test

.PHONY: help build test test-unit chaos bench verify demo tools controlplane prometheus chromium fidelity forecast-report chart

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/tiler (the product) and bin/tiler-dev (demo, fidelity)
	$(GO) build -o $(BIN) ./cmd/tiler
	$(GO) build -o $(DEVBIN) ./cmd/tiler-dev

tools: controlplane prometheus chromium ## install everything the tests need (control plane binaries, Prometheus, Chromium)

controlplane: ## build kube-apiserver, kube-scheduler, kube-controller-manager and etcd into the cache (skipped when present)
	@hack/build-controlplane.sh

prometheus: ## install Prometheus and promtool from Debian when missing
	@hack/install-prometheus.sh

chromium: ## install Chromium from Debian when missing (headless checks of the HTML replay report)
	@hack/install-chromium.sh

test: tools ## run every test (unit, wire-level, Prometheus, control-plane e2e, the Helm chart's)
	$(GO) test -count=1 -timeout 60m ./...
	cd $(CHART_TEST) && $(GO) test -count=1 -timeout 30m ./...

chaos: controlplane ## fault tests on a live cluster (internal/chaos, build tag chaos): make chaos [CYCLES=15] [SEED=n]
	CHAOS_CYCLES=$(or $(CYCLES),15) CHAOS_SEED=$(SEED) $(GO) test -tags chaos -count=1 -timeout 30m -v ./internal/chaos/

test-unit: ## run the tests that need no external tools
	$(GO) test -count=1 -short ./...
	cd $(CHART_TEST) && $(GO) test -count=1 -short ./...

chart: ## render deploy/tiler.yaml from the Helm chart deploy/chart/tiler (default values) and copy deploy/crds into the chart
	cd $(CHART_TEST) && $(GO) run ./render

bench: ## run the benchmarks once each
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./...

verify: ## gofmt, vet, go mod tidy, architecture rules (internal/archtest)
	@hack/verify.sh

demo: build ## the main job on the embedded default
	@hack/demo.sh

fidelity: tools ## differential test of plans against the real kube-scheduler: make fidelity SEEDS=N [FIRST=1] [DRA=1] [NARROW_ZONES=1] [SOFT=1] [SCHEDULER_CONFIG=file] [OUT=dir] [MODES=on,nominations,off]
	FIDELITY_SEEDS=$(or $(SEEDS),50) FIDELITY_FIRST=$(FIRST) FIDELITY_DRA=$(DRA) FIDELITY_NARROW_ZONES=$(NARROW_ZONES) FIDELITY_SOFT=$(SOFT) FIDELITY_SCHEDULER_CONFIG=$(abspath $(SCHEDULER_CONFIG)) FIDELITY_OUT=$(OUT) FIDELITY_MODES=$(MODES) \
		$(GO) test -count=1 -run '^TestFidelitySeeds$$' -timeout 0 -v ./fidelity/

forecast-report: ## the forecaster's backtest and replay figures on every trace of testdata/traces (README=1 writes them into README.md, BEFORE=<ref> adds that commit's, SETS=tune leaves eval out)
	@README="$(README)" BEFORE="$(BEFORE)" SETS="$(SETS)" hack/forecast-report.sh
