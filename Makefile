# Sluice. `make dev` runs it on the local rig; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
export SLUICE_ASSETS ?= $(BIN)

.PHONY: all build tools rig-tools test-tools dev test test-unit chaos bench bench-rig bench-rig-scale bench-submit bench-submit-deps lint generate clean

# The binaries the rig runs (kubelet and coredns for its real nodes); the tests also need helm
# (chart tests); controller-gen is only for `make generate`.
RIG_TOOLS  := etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kwok,kubelet,coredns
TEST_TOOLS := $(RIG_TOOLS),helm

all: build

## build: the sluice binary into ./bin/sluice, and beside it, where libpmix-dev is installed,
## the launcher's PMIx server for srun --mpi=pmix (bin/sluice-pmix, a C program)
build:
	$(GO) build -o $(BIN)/sluice ./cmd/sluice
	@if pkg-config --exists pmix; then \
	  $(CC) -O2 -Wall -o $(BIN)/sluice-pmix slurmapi/launch/pmix/sluice-pmix.c $$(pkg-config --cflags --libs pmix) -lpthread; \
	else echo "build: no libpmix-dev, so no bin/sluice-pmix: srun --mpi=pmix will say so (apt-get install libpmix-dev)"; fi

## tools: the rig's binaries (etcd, kube-*, kwok, kubelet, coredns, controller-gen, helm), each only if missing or stale
tools:
	cd hack/tools && $(GO) run . -bin $(BIN)

rig-tools:
	cd hack/tools && $(GO) run . -bin $(BIN) -only $(RIG_TOOLS)

test-tools:
	cd hack/tools && $(GO) run . -bin $(BIN) -only $(TEST_TOOLS)

## dev: the local rig with simulated GPU nodes, the Sluice server and the SQLite ledger
dev: rig-tools build
	$(BIN)/sluice dev

## test: lint, unit tests and the end-to-end suites on the rig (one package at a time: each starts a rig)
test: test-tools lint
	$(GO) test -p 1 -count=1 -timeout 80m ./...

## test-unit: only what needs no rig
test-unit:
	$(GO) test -short -count=1 ./...

## chaos: the fault suite (test/chaos) with larger bursts and longer faults; `make test` runs it small
chaos: rig-tools
	SLUICE_CHAOS_SCALE=full $(GO) test -p 1 -count=1 -v -timeout 60m ./test/chaos/

## bench: the benchmarks of the core and the ledger (the rig's scale benchmark: sluice bench)
bench: rig-tools
	$(GO) test -run '^$$' -bench . -benchmem ./bridge/... ./accounting/...

## bench-rig: the scale benchmark on fresh rigs: sluice server as installed (as the chart's
## ServiceAccount, so helm renders its RBAC and FlowSchema), a bare binder and kube-scheduler,
## 500 nodes x 8 GPUs, 4000 pods streamed by 100 clients, 3 runs each (minutes;
## docs/benchmarks.md). BENCH_FLAGS adds to it, e.g. --modes stream,backlog,reclaim or
## --only sluice,sluice-no-webhook,sluice-scheduler,bare,kube-scheduler
bench-rig: test-tools build
	$(BIN)/sluice bench -v --nodes 500 --gpus 8 --pods 4000 $(BENCH_FLAGS)

## bench-rig-scale: the same at 2000 nodes x 8 GPUs, 16,000 pods (tens of minutes)
bench-rig-scale: test-tools build
	$(BIN)/sluice bench -v --scale --gpus 8

## bench-submit: Slurm job submissions over REST, 16 keep-alive clients, 5000 and 50,000 held and
## runnable jobs, to sluice server as installed on a fresh rig and, where bench-submit-deps has
## installed them, to real slurmrestd + slurmctld in the same run (docs/benchmarks.md)
bench-submit: rig-tools build
	$(BIN)/sluice bench --submit -v --jobs 5000,50000 $(BENCH_FLAGS)

## bench-submit-deps: Debian's Slurm 22.05 (slurmctld, slurmrestd, the JWT plugin) and munge, which
## bench-submit runs beside Sluice; needs root (or sudo) and apt
bench-submit-deps:
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends slurmctld slurmrestd slurm-wlm-jwt-plugin slurm-client munge

## lint: gofmt, go vet, go mod tidy -diff and staticcheck (staticcheck.conf)
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	cd hack/tools && $(GO) run . -bin $(BIN) -only staticcheck
	$(BIN)/staticcheck ./...

## generate: deepcopy and CRD YAML (controller-gen)
generate: tools
	PATH=$(BIN):$$PATH $(GO) generate ./k8sscheduler/apis/...

clean:
	rm -rf $(BIN) .sluice
