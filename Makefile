# steady's build. `make test` is the whole test suite; `make envtest` builds
# the control-plane binaries that the tests run (once; later runs reuse them).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# Every Go module in the repository: the library, and hack/, examples/, bench/.
MODULES := $(sort $(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './.git/*')))

.PHONY: envtest test help

help:
	@echo "make test     vet and test every module with -race against a real control plane"
	@echo "make envtest  build (or find) the envtest assets and print their directory"

envtest:
	@cd hack && go run ./cmd/envtest-assets

test:
	@assets="$$(cd hack && go run ./cmd/envtest-assets)"; \
	export KUBEBUILDER_ASSETS="$$assets" STEADY_TESTENV_REQUIRE=1; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	for m in $(MODULES); do \
		echo "==> $$m: go vet"; (cd "$$m" && go vet ./...); \
	done; \
	for m in $(MODULES); do \
		echo "==> $$m: go test -race"; (cd "$$m" && go test -race ./...); \
	done
