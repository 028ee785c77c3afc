#!/usr/bin/env bash
# make test: vet and test every Go module in the repository with -race against
# a real control plane, the library's pure tests without one, and the library
# again on the newer controller-runtime line (hack/compat-test.sh).
#
# Most of a test's time is spent waiting on the API server, not on the CPU, so
# the suites run side by side: the assets build while the modules are vetted
# (with -race, so that the test builds reuse the compiled packages), then every
# module's tests, the pure tests and the compat suite start at once, each with
# up to TEST_P packages at a time (go test -p). Each suite's output is printed
# whole when it ends, in the order the suites were started.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_P=${TEST_P:-4}
logs=$(mktemp -d "${TMPDIR:-/tmp}/steady-test-XXXXXX")
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
	rm -rf "$logs"
}
trap cleanup EXIT

modules=$(find . -name go.mod -not -path './.git/*' | sed 's|/go.mod$||' | sort)

# start runs a job in the background, in its own process group so that
# cleanup can stop all of it, with its output in $logs/<its index>.log.
names=()
start() {
	local name=$1
	shift
	set -m
	local i=${#pids[@]}
	(
		rc=0
		"$@" || rc=$?
		echo "$((SECONDS - t0))" >"$logs/$i.took"
		exit "$rc"
	) </dev/null >"$logs/$i.log" 2>&1 &
	set +m
	pids+=($!)
	names+=("$name")
}

t0=$SECONDS
start assets bash -c 'cd hack && go run ./cmd/envtest-assets 2>&1 >"$0"' "$logs/assets.dir"
for m in $modules; do
	echo "==> $m: go vet -race"
	(cd "$m" && go vet -race ./...)
done
if ! wait "${pids[0]}"; then
	echo "==> building the envtest assets failed:"
	cat "$logs/0.log"
	exit 1
fi
cat "$logs/0.log"
assets=$(cat "$logs/assets.dir")
echo "KUBEBUILDER_ASSETS=$assets"
export KUBEBUILDER_ASSETS="$assets" STEADY_TESTENV_REQUIRE=1 STEADY_DOCS_RUN=1
pids=() names=()
t0=$SECONDS

for m in $modules; do
	start "$m: go test -race" bash -c "cd '$m' && go test -race -p $TEST_P ./..."
done
start "library without a control plane: pure tests run, envtest cases skip" make --no-print-directory test-pure
start "library on controller-runtime v0.25: go test -race" hack/compat-test.sh -p "$TEST_P"

failed=()
for i in "${!pids[@]}"; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	echo "==> ${names[$i]} ($(cat "$logs/$i.took" 2>/dev/null || echo ?)s after the start of the tests)"
	cat "$logs/$i.log"
	if [ "$rc" -ne 0 ]; then failed+=("${names[$i]}"); fi
done
pids=()
if [ "${#failed[@]}" -gt 0 ]; then
	printf '==> FAILED: %s\n' "${failed[@]}"
	exit 1
fi
echo "==> every suite passed"
