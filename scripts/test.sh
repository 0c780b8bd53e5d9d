#!/usr/bin/env bash
# Runs every check kplane has: formatting, vet, staticcheck and the race-enabled
# tests of every Go module in the repository. Exits non-zero on any failure.
# Set KPLANE_SHORT=1 to pass -short (skips the long stress tests).
set -euo pipefail
cd "$(dirname "$0")/.."

short=()
[ "${KPLANE_SHORT:-}" = 1 ] && short=(-short)

# Every module in the repo: the root, bench/ and test/compat/.
modules=(.)
for m in bench test/compat; do
	[ -f "$m/go.mod" ] && modules+=("$m")
done

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# staticcheck is built once, as a normal binary. vet and staticcheck then
# load the packages with -race (GOFLAGS), so that the one race-enabled
# build of every package and dependency serves them and the tests alike,
# instead of a second, plain build.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2

start=$SECONDS
elapsed() { echo "   ($((SECONDS - start))s so far)"; }
for m in "${modules[@]}"; do
	echo "== module $m: go vet"
	(cd "$m" && GOFLAGS=-race go vet ./...)
	elapsed
	if [ "$m" = . ]; then
		# bench/ and test/compat/ hold only tests and benchmarks: go vet
		# and the vet checks of go test cover them.
		echo "== module $m: staticcheck"
		(cd "$m" && GOFLAGS=-race "$bin/staticcheck" ./...)
		elapsed
	fi
	echo "== module $m: go test -race"
	(cd "$m" && go test -race -timeout 20m "${short[@]}" ./...)
	elapsed
done
echo "== all checks passed in $((SECONDS - start))s"
