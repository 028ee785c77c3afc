#!/usr/bin/env bash
# Runs the library's suite against the newer controller-runtime line, in a
# copy of the module, on top of the pinned versions in go.mod.
#
# Usage:
#   hack/compat-test.sh [go test flags...]           prepare a temporary copy and test it
#   hack/compat-test.sh prepare DIR                  copy, go get, tidy and vet into DIR (no assets needed)
#   hack/compat-test.sh run DIR [go test flags...]   test a copy prepare made
# KUBEBUILDER_ASSETS as for make test, for the tests only: make test prepares the
# copy while the assets build, so that the downloads and the vet's compile of the
# newer k8s.io tree are not on the tests' critical path.
set -euo pipefail
CR_VERSION=${CR_VERSION:-v0.25.2}
K8S_VERSION=${K8S_VERSION:-v0.37.2}
root=$(cd "$(dirname "$0")/.." && pwd)

prepare() {
	local dir=$1
	mkdir -p "$dir"
	# The whole tree, so that the docs' links resolve; the other modules (hack, examples, bench) have
	# go.mod files of their own and stay out of the library's ./... and its go.mod.
	(cd "$root" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$dir"
	cd "$dir"
	echo "==> compat: controller-runtime $CR_VERSION, k8s.io $K8S_VERSION"
	# Without the "go: downloading" lines; a failed go get or tidy fails the run
	# (the suite would otherwise pass on the pinned versions).
	quiet() { "$@" 2>&1 | { grep -v '^go: downloading' || true; }; }
	quiet go get "sigs.k8s.io/controller-runtime@$CR_VERSION" \
		"k8s.io/api@$K8S_VERSION" "k8s.io/apimachinery@$K8S_VERSION" "k8s.io/client-go@$K8S_VERSION" \
		"k8s.io/apiextensions-apiserver@$K8S_VERSION" "k8s.io/kubectl@$K8S_VERSION" "k8s.io/cli-runtime@$K8S_VERSION"
	quiet go mod tidy
	grep -E 'sigs.k8s.io/controller-runtime |k8s.io/client-go ' go.mod
	if ! grep -q "sigs.k8s.io/controller-runtime $CR_VERSION\$" go.mod || ! grep -q "k8s.io/client-go $K8S_VERSION\$" go.mod; then
		echo "compat: go.mod does not name controller-runtime $CR_VERSION and client-go $K8S_VERSION" >&2
		exit 1
	fi
	go vet -race ./...
}

run() {
	local dir=$1
	shift
	cd "$dir"
	# The library's go.mod now names other versions than docs/compatibility.md's table:
	# TestCompatibilityTable checks the table against the pinned go.mod, not this one.
	STEADY_COMPAT=1 go test -race "$@" ./...
}

case "${1:-}" in
prepare)
	[ $# -eq 2 ] || { echo "usage: $0 prepare DIR" >&2; exit 2; }
	prepare "$2"
	;;
run)
	[ $# -ge 2 ] || { echo "usage: $0 run DIR [go test flags...]" >&2; exit 2; }
	shift
	run "$@"
	;;
*)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/steady-compat-XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	(prepare "$tmp")
	run "$tmp" "$@"
	;;
esac
