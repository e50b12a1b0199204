#!/usr/bin/env bash
# test/cluster/scale.sh — time from `kubectl apply` of a Deployment of SCALE_REPLICAS (20)
# replicas (manifests/spread.yaml: registry.k8s.io/pause from the offline registry, spread
# over the nodes) to all of them Running, on the running cluster (`make cluster-scale`, after
# `make cluster`). Runs SCALE_RUNS times (default 3), each in a fresh namespace that is
# deleted (and its pods gone) before the next run; prints every run and the median.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${CLUSTER_OUT:-$ROOT/_output/cluster}
RUNS=${SCALE_RUNS:-3}
N=${SCALE_REPLICAS:-20}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "scale: SCALE_REPLICAS=$N: want a number > 0" >&2; exit 2; }
[ -f "$OUT/env" ] || { echo "scale: no cluster ($OUT/env missing): run make cluster first" >&2; exit 1; }
# shellcheck disable=SC1091
. "$OUT/env"
kubectl() { "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG" --request-timeout 60s "$@"; }
now() { date +%s.%N; }
running() { kubectl -n "$1" get pods -l app=spread --field-selector=status.phase=Running -o name | grep -c . || true; }

# once NS: prints the seconds from apply to N Running (fails after 300 s).
once() {
	local ns=$1 t0 end
	kubectl create namespace "$ns" >/dev/null
	t0=$(now)
	sed "s/^  replicas: 20\$/  replicas: $N/" "$ROOT/test/cluster/manifests/spread.yaml" | kubectl -n "$ns" apply -f - >/dev/null
	end=$((SECONDS + 300))
	until [ "$(running "$ns")" = "$N" ]; do
		[ $SECONDS -lt $end ] || { echo "scale: $ns: not $N Running after 300s" >&2; return 1; }
		sleep 0.2
	done
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'
}

cleanup() { kubectl delete namespace "$1" --ignore-not-found --timeout=180s >/dev/null; }

times=()
for i in $(seq 1 "$RUNS"); do
	ns=scale-$i
	cleanup "$ns"
	rc=0
	t=$(once "$ns") || rc=$?
	cleanup "$ns" || rc=1
	[ $rc = 0 ] || exit 1
	printf 'scale: run %d: %d replicas Running %.1fs after kubectl apply\n' "$i" "$N" "$t"
	times+=("$t")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
printf 'scale: %s, %s nodes: median of %d: %.1fs from kubectl apply of %d replicas to all Running\n' \
	"$CLUSTER_RUNTIME" "$CLUSTER_NODES" "$RUNS" "$median" "$N"
