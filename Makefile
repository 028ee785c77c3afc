# steady's build. `make test` is the whole test suite; `make envtest` builds
# the control-plane binaries that the tests run (once; later runs reuse them).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# Every Go module in the repository: the library, and hack/, examples/, bench/.
MODULES := $(sort $(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './.git/*')))

.PHONY: envtest test test-pure test-compat generate demo soak bench help

# make bench: the numbers of Teams, the runs per setup, more flags of bench/cmd/bench.
BENCH_N ?= 100,1000
BENCH_RUNS ?= 3
BENCH_FLAGS ?=

help:
	@echo "make test     vet and test every module with -race against a real control plane, then the library on controller-runtime v0.25 (TEST_P=4: packages at a time per module)"
	@echo "make envtest  build (or find) the envtest assets and print their directory"
	@echo "make generate  regenerate the examples' deepcopy code, CRDs and RBAC (controller-gen, pinned in examples/go.mod)"
	@echo "make demo     run the five example operators on a local control plane, show their trees, delete everything (DEMO_KEEP=1: keep it running for kubectl)"
	@echo "make test-compat  the library's suite on controller-runtime v0.25 / k8s.io v0.37 (make test runs it too)"
	@echo "make soak     the reliability soak of the five example operators: churn, faults, a lagging cache, dropped watches, another writer, two replicas with the leader killed, the API server restarted (make test runs a smoke of it)"
	@echo "make bench    the same operator with steady, hand-written controller-runtime and cluster-api's patch helper, measured; regenerates docs/benchmarks.md (BENCH_N=100,1000 BENCH_RUNS=3 BENCH_FLAGS=...)"

envtest:
	@cd hack && go run ./cmd/envtest-assets

# hack/test.sh: the assets while every module is vetted, then every suite side
# by side (TEST_P: packages at a time per suite).
test:
	@hack/test.sh

# The library's tests where no control-plane binaries can be found: the pure
# tests must pass and every envtest case must skip (testenv's own Examples
# start a control plane and are left out).
test-pure:
	@empty="$$(mktemp -d)"; trap 'rm -rf "$$empty"' EXIT; \
	env -u KUBEBUILDER_ASSETS -u STEADY_TESTENV_REQUIRE -u CI XDG_DATA_HOME="$$empty" HOME="$$empty" \
		GOCACHE="$$(go env GOCACHE)" GOMODCACHE="$$(go env GOMODCACHE)" GOPATH="$$(go env GOPATH)" \
		go test -race -count=1 -skip '^Example(Environment_StopAPIServer)?$$' ./...

test-compat:
	@assets="$$(cd hack && go run ./cmd/envtest-assets)"; \
	KUBEBUILDER_ASSETS="$$assets" STEADY_TESTENV_REQUIRE=1 hack/compat-test.sh

generate:
	@cd examples && go generate ./...

# The examples on a local control plane: see examples/cmd/demo.
demo:
	@assets="$$(cd hack && go run ./cmd/envtest-assets)"; \
	cd examples && KUBEBUILDER_ASSETS="$$assets" go run ./cmd/demo

# The reliability soak (docs/reliability.md): the five example operators in
# two replicas with leader election under churn and faults, the leader
# killed and the API server restarted (examples/cmd/soak); make test runs its
# smoke (examples/soak TestSoakSmoke). SOAK_OWNERS, SOAK_CHURN, SOAK_QUIET,
# SOAK_SEED resize it.
soak:
	@assets="$$(cd hack && go run ./cmd/envtest-assets)"; \
	cd examples && KUBEBUILDER_ASSETS="$$assets" STEADY_TESTENV_REQUIRE=1 go run -race ./cmd/soak

# The benchmark (bench/, its own module): regenerates docs/benchmarks.md.
bench:
	@assets="$$(cd hack && go run ./cmd/envtest-assets)"; \
	cd bench && KUBEBUILDER_ASSETS="$$assets" go run ./cmd/bench -n "$(BENCH_N)" -runs "$(BENCH_RUNS)" -out ../docs/benchmarks.md $(BENCH_FLAGS)
