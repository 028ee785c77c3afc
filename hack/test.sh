#!/usr/bin/env bash
# make test: vet and test every Go module in the repository with -race against
# a real control plane, the library's pure tests without one, and the library
# again on the newer controller-runtime line (hack/compat-test.sh).
#
# Building is CPU-bound; the tests mostly wait on the API server. So the two
# overlap: the envtest assets build and the compat suite's copy is prepared
# (its downloads and the vet of the newer k8s.io tree) while the modules are
# vetted one after another, with -race, so that the test builds reuse the
# compiled packages; each module's tests start once its vet passed and the
# assets are built, with up to TEST_P packages at a time (go test -p), while
# the next modules are vetted. The library goes first: its pure tests start
# right after its vet, its compat suite once the copy is prepared; the
# examples, the longest suites after the library's, come next. What the
# library's suites wait for (the assets, the library's vet, the compat copy)
# runs at the normal priority, the other vets and the pure tests at a lower
# one (nice), so that they use the CPU the critical path leaves. Each job's
# output is printed whole when every job has ended, in the order they started,
# with the second each ended.
#
# The jobs stay in the caller's process group, so that a signal to the group
# (Ctrl-C, a CI timeout) stops all of them. A failed vet starts no more suites;
# every job started is waited for and reported.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_P=${TEST_P:-4}
logs=$(mktemp -d "${TMPDIR:-/tmp}/steady-test-XXXXXX")
trap 'rm -rf "$logs"' EXIT

modules=$(find . -name go.mod -not -path './.git/*' | sed 's|/go.mod$||' | sort |
	awk '{ print ($0 == "." ? 0 : $0 == "./examples" ? 1 : 2), $0 }' | sort -s -n -k1,1 | cut -d' ' -f2-)

# start runs a job in the background with its output in $logs/<n>.log and,
# once it ends, the seconds since make test started in $logs/<n>.took and
# its exit status in $logs/<n>.rc; it sets job to n and names it.
n=0
pid=()
names=()
start() {
	job=$n
	n=$((n + 1))
	names[job]=$1
	shift
	(
		rc=0
		"$@" || rc=$?
		echo "$((SECONDS - t0))" >"$logs/$job.took"
		echo "$rc" >"$logs/$job.rc"
		exit "$rc"
	) </dev/null >"$logs/$job.log" 2>&1 &
	pid[job]=$!
}

# ended waits, inside a job, until job $1 has ended, and fails unless it
# ended well.
ended() {
	while [ ! -e "$logs/$1.rc" ]; do sleep 1; done
	[ "$(cat "$logs/$1.rc")" = 0 ]
}

# with_assets runs "$@" once the assets are built, with KUBEBUILDER_ASSETS
# naming them.
with_assets() {
	ended "$assets_job" || { echo "==> not run: the envtest assets did not build"; return 1; }
	KUBEBUILDER_ASSETS=$(cat "$logs/assets.dir") STEADY_TESTENV_REQUIRE=1 STEADY_DOCS_RUN=1 "$@"
}

module_tests() {
	with_assets bash -c 'cd "$0" && go test -race -p "$1" ./...' "$1" "$TEST_P"
}

compat_tests() {
	ended "$compat_job" || { echo "==> not run: preparing the compat copy failed (its log is above)"; return 1; }
	with_assets hack/compat-test.sh run "$logs/compat" -p "$TEST_P"
}

t0=$SECONDS
start "envtest assets: go run ./cmd/envtest-assets" \
	bash -c 'cd hack && go run ./cmd/envtest-assets 2>&1 >"$0"' "$logs/assets.dir"
assets_job=$job
start "library on controller-runtime v0.25: preparing its copy" hack/compat-test.sh prepare "$logs/compat"
compat_job=$job
failed=0
for m in $modules; do
	echo "==> $m: go vet -race ($((SECONDS - t0))s after make test started)"
	prio=10
	[ "$m" != . ] || prio=0
	if ! (cd "$m" && nice -n "$prio" go vet -race ./...); then
		echo "==> FAILED: go vet of $m; no more suites start"
		failed=1
		break
	fi
	start "$m: go test -race" module_tests "$m"
	if [ "$m" = . ]; then
		start "library without a control plane: pure tests run, envtest cases skip" \
			nice -n 10 env STEADY_DOCS_RUN=1 "${MAKE:-make}" --no-print-directory test-pure
		start "library on controller-runtime v0.25: go test -race" compat_tests
	fi
done
echo "==> every vet has ended ($((SECONDS - t0))s after make test started)"

for ((i = 0; i < n; i++)); do
	rc=0
	wait "${pid[i]}" || rc=$?
	echo "==> ${names[i]} (ended $(cat "$logs/$i.took" 2>/dev/null || echo '?')s after make test started)"
	cat "$logs/$i.log"
	if [ "$rc" -ne 0 ]; then
		echo "==> FAILED: ${names[i]}"
		failed=1
	fi
done
if [ "$failed" -ne 0 ]; then
	echo "==> FAILED: the lines above starting '==> FAILED' name what failed"
	exit 1
fi
echo "==> every suite passed"
