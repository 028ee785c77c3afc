#!/usr/bin/env bash
# make test: vet and test every Go module in the repository with -race against
# a real control plane, the library's pure tests without one, and the library
# again on the newer controller-runtime line (hack/compat-test.sh).
#
# Most of a test's time is spent waiting on the API server, not on the CPU, so
# the suites run side by side: the assets build while the modules are vetted
# (with -race, so that the test builds reuse the compiled packages) and while
# the compat suite's copy is prepared (its downloads and the vet of the newer
# k8s.io tree); then every module's tests, the pure tests and the compat suite
# start at once, each with up to TEST_P packages at a time (go test -p). Each
# suite's output is printed whole when it ends, in the order the suites were
# started.
#
# The jobs stay in the caller's process group, so that a signal to the group
# (Ctrl-C, a CI timeout) stops all of them, and every job is waited for: a
# failed vet waits for the asset build and the compat copy rather than
# interrupt them.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_P=${TEST_P:-4}
logs=$(mktemp -d "${TMPDIR:-/tmp}/steady-test-XXXXXX")
trap 'rm -rf "$logs"' EXIT

modules=$(find . -name go.mod -not -path './.git/*' | sed 's|/go.mod$||' | sort)

# start runs a job in the background with its output in $logs/<n>.log and,
# once it ends, the seconds since t0 in $logs/<n>.took and its exit status in
# $logs/<n>.rc; it sets job to n.
n=0
start() {
	job=$n
	n=$((n + 1))
	(
		rc=0
		"$@" || rc=$?
		echo "$((SECONDS - t0))" >"$logs/$job.took"
		echo "$rc" >"$logs/$job.rc"
		exit "$rc"
	) </dev/null >"$logs/$job.log" 2>&1 &
	pid[job]=$!
}
pid=()

t0=$SECONDS
start bash -c 'cd hack && go run ./cmd/envtest-assets 2>&1 >"$0"' "$logs/assets.dir"
assets_job=$job
start hack/compat-test.sh prepare "$logs/compat"
compat_job=$job
vet=0
for m in $modules; do
	echo "==> $m: go vet -race"
	(cd "$m" && go vet -race ./...) || { vet=1; break; }
done
assets_rc=0
wait "${pid[assets_job]}" || assets_rc=$?
cat "$logs/$assets_job.log"
if [ "$vet" -ne 0 ] || [ "$assets_rc" -ne 0 ]; then
	wait "${pid[compat_job]}" || true
	[ "$vet" -eq 0 ] || echo "==> FAILED: go vet"
	[ "$assets_rc" -eq 0 ] || echo "==> FAILED: building the envtest assets"
	exit 1
fi
assets=$(cat "$logs/assets.dir")
echo "==> the vet and the assets took $((SECONDS - t0))s"
echo "KUBEBUILDER_ASSETS=$assets"
export KUBEBUILDER_ASSETS="$assets" STEADY_TESTENV_REQUIRE=1 STEADY_DOCS_RUN=1

t0=$SECONDS
first=$n
names=()
for m in $modules; do
	start bash -c "cd '$m' && go test -race -p $TEST_P ./..."
	names[job]="$m: go test -race"
done
start "${MAKE:-make}" --no-print-directory test-pure
names[job]="library without a control plane: pure tests run, envtest cases skip"
# The compat suite starts once its copy is prepared (it usually is by now).
start bash -c 'while [ ! -e "$0" ]; do sleep 1; done
	cat "$1"
	[ "$(cat "$0")" = 0 ] || { echo "==> preparing the compat copy failed"; exit 1; }
	exec hack/compat-test.sh run "$2" -p "$3"' \
	"$logs/$compat_job.rc" "$logs/$compat_job.log" "$logs/compat" "$TEST_P"
names[job]="library on controller-runtime v0.25: go test -race"

failed=0
for ((i = first; i < n; i++)); do
	rc=0
	wait "${pid[i]}" || rc=$?
	echo "==> ${names[i]} (ended $(cat "$logs/$i.took" 2>/dev/null || echo '?')s after the tests started)"
	cat "$logs/$i.log"
	if [ "$rc" -ne 0 ]; then
		echo "==> FAILED: ${names[i]}"
		failed=1
	fi
done
if [ "$failed" -ne 0 ]; then
	echo "==> FAILED: the lines above starting '==> FAILED' name the suites"
	exit 1
fi
echo "==> every suite passed"
