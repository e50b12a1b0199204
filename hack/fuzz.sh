#!/usr/bin/env bash
# Runs every Go fuzz target of the module (any `func FuzzXxx(f *testing.F)` in a
# _test.go file, found with `go test -list`) for FUZZTIME each, one after the
# other, with FUZZ_PARALLEL workers. `make unit` already runs each target's seed
# corpus (testdata/fuzz/<FuzzName>/ and its f.Add seeds); this explores beyond it.
#
#   FUZZTIME=60s        time per target (`make test` uses 20s)
#   FUZZ_PARALLEL=2     fuzzing workers per target (Go's default is every core)
#   FUZZ=regexp         only the targets whose name matches
#
# A failing input is written by Go to <package>/testdata/fuzz/<FuzzName>/<hash>;
# the script goes on with the other targets and fails at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
GOTAGS=${GOTAGS:-seccomp}
FUZZTIME=${FUZZTIME:-60s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-2}
FUZZ=${FUZZ:-.}

cd "$ROOT"
export CGO_ENABLED=1

# Packages whose test files declare a fuzz target (a cheap grep), then their
# exact target names from the test binary.
mapfile -t dirs < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Z0-9_]' . |
	grep -v -e '^\./_output/' -e '/testdata/' | xargs -r -n1 dirname | sort -u)
targets=()
for d in "${dirs[@]}"; do
	while read -r name; do
		[[ $name =~ ^Fuzz ]] && [[ $name =~ $FUZZ ]] && targets+=("$d $name")
	done < <("$GO" test -tags "$GOTAGS" -list '^Fuzz' "$d")
done
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets match '$FUZZ'"
	exit 0
fi
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each, $FUZZ_PARALLEL workers"

# fuzz_one DIR NAME LOG: one target, its output also in LOG.
fuzz_one() {
	"$GO" test -tags "$GOTAGS" -run "^$2\$" -fuzz "^$2\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "${FUZZ_MINIMIZE:-2s}" \
		-parallel "$FUZZ_PARALLEL" "$1" 2>&1 | tee "$3"
}

# deadline_flake LOG: the run failed only with Go's own "context deadline
# exceeded" at the -fuzztime boundary (golang/go#75804, fixed in Go 1.27:
# the coordinator reports its own timeout as the target's failure when a
# worker is slow to stop, e.g. on a loaded machine): no failing input was
# written, nothing panicked, no t.Error line.
deadline_flake() {
	grep -q '^    context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written to|panic:|_test\.go:[0-9]+:' "$1"
}

failed=()
start=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${targets[@]}"; do
	d=${t% *} name=${t#* }
	t0=$SECONDS
	echo "==> fuzz $d $name"
	ok=0
	if fuzz_one "$d" "$name" "$log"; then
		ok=1
	elif deadline_flake "$log"; then
		echo "<== fuzz $name: Go's fuzz-deadline race (golang/go#75804; no failing input): once more"
		fuzz_one "$d" "$name" "$log" && ok=1
	fi
	if [ $ok = 1 ]; then
		echo "<== fuzz $name: ok in $((SECONDS - t0))s"
	else
		echo "<== fuzz $name: FAILED after $((SECONDS - t0))s (failing input under $d/testdata/fuzz/$name/)"
		failed+=("$name")
	fi
done
echo "fuzz: ${#targets[@]} targets in $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	exit 1
fi
