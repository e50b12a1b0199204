#!/usr/bin/env bash
# hack/monitor-mem.sh [PODS] — the per-pod cost of minicri's monitor, alone (the memory
# part of `make bench`, for minicri only): starts a private instance (hack/instance.sh,
# offline test registry), runs PODS (default 20) pods in parallel with cribench, and
# prints PSS per role (monitors, pauses, daemon) and per pod; then the RSS and threads
# of one monitor and the timings of one pod start. MINICRI selects the binary (its
# minicri-pause and minicri-monitor next to it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PODS=${1:-20}
OUT=$ROOT/_output/monitor-mem
mkdir -p "$OUT"
# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
export INSTANCE_REGISTRY=test
trap 'instance_stop' EXIT
(cd "$ROOT" && go build -o "$OUT/cribench" ./test/bench/cribench)
instance_start monmem mcri-mm0 10.196.0.0/16 mm
"$OUT/cribench" pods -endpoint "$INSTANCE_ENDPOINT" -runtime minicri -n 10 -parallel "$PODS" \
	-cgroup-parent "$INSTANCE_CGROUP" -mem-pid "$INSTANCE_PID" -mem-match "$INSTANCE_TMP/state" \
	-out "$OUT/pods.json"
python3 - "$OUT/pods.json" "$PODS" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1])); pods = int(sys.argv[2])
for step, v in sorted(d["steps_ms"].items()):
    print(f"{step:22s} median {statistics.median(v):7.1f} ms")
print(f"parallel {pods}: wall {d['parallel_wall_ms']:.0f} ms")
m0, mn = d["mem_0"], d["mem_n"]
for role in sorted(mn["roles"]):
    r = mn["roles"][role]
    print(f"{role:10s} {r['procs']:3d} procs {r['pss_kib']/1024:7.1f} MiB PSS")
print(f"per pod (total, workload excluded): {(mn['total_kib']-m0['total_kib'])/pods/1024:.2f} MiB")
mon = mn["roles"].get("helpers", {}); pau = mn["roles"].get("pause", {})
print(f"per pod (monitor + pause): {(mon.get('pss_kib',0)+pau.get('pss_kib',0))/pods/1024:.2f} MiB")
PY

# One pod and container through crictl: the monitor's RSS and threads.
cat >"$OUT/pod.json" <<JSON
{"metadata":{"name":"monmem","namespace":"default","uid":"monmem-1","attempt":0},"log_directory":"$OUT/logs","linux":{"cgroup_parent":"$INSTANCE_CGROUP"}}
JSON
cat >"$OUT/ctr.json" <<'JSON'
{"metadata":{"name":"sleep"},"image":{"image":"registry.k8s.io/e2e-test-images/busybox:1.36.1-1"},"command":["sleep","3600"],"log_path":"sleep.log","linux":{}}
JSON
pod=$(instance_crictl runp "$OUT/pod.json")
ctr=$(instance_crictl create "$pod" "$OUT/ctr.json" "$OUT/pod.json")
instance_crictl start "$ctr" >/dev/null
mon=$(instance_crictl inspectp "$pod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["monitorPid"])')
echo "one monitor (pid $mon, $(readlink "/proc/$mon/exe")):"
grep -E '^(VmRSS|RssAnon|RssFile|Threads):' "/proc/$mon/status" | tr -s ' \t' ' ' | sed 's/^/  /'
echo "  Pss: $(awk '/^Pss:/ {print $2 " kB"}' "/proc/$mon/smaps_rollup")"
instance_crictl rm -f "$ctr" >/dev/null
instance_crictl rmp -f "$pod" >/dev/null
