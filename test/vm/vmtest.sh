#!/usr/bin/env bash
# test/vm/vmtest.sh — `make vmtest`: boots the VM lab, runs the steps below in the guest
# one after the other (each timed, all run even after a failure), stops the guest and
# exits 1 if any step failed. Binaries are built on the host (by make: bin/minicri,
# bin/minicri-pause; here: the integration test binary) and only run in the guest.
#
# Adding a step is one line in STEPS: "name|command run in the guest from the checkout".
#
# Environment:
#   VMTEST_RUN     the integration tests to run (a -test.run regexp; default VMTEST_RUN_DEFAULT)
#   VMTEST_STEPS   the names of the steps to run (default: all), e.g. "smoke integration"
#   VMTEST_OUT     where logs go (default _output/vmtest); a summary in $VMTEST_OUT/summary.txt
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}

# A fixed subset, 262 s of tests in the guest (README.md has the times): pods and
# their network, bad input, the container lifecycle and its cgroup, exit codes, OOM,
# resource updates, daemon restarts and killed monitors, exec and port-forward, metrics,
# user namespaces.
VMTEST_RUN_DEFAULT='^(TestPodGetsIPAndOwnNamespaces|TestTwoPodsReachEachOther|TestHostPortGetsRulesAndLosesThem|TestBadInputGetsClearErrors|TestRestartKeepsPodsUntouched|TestContainerLifecycleLogsAndLeaks|TestExitCodesAndReasons|TestOOMKillIsReported|TestSymlinkHostPathMountAndUpdateResources|TestStreamListsMatchListsAndUpdatePodSandboxResources|TestContainersSurviveDaemonRestartAndKeepLogging|TestKilledMonitorLeavesContainersManageable|TestExecStreams|TestPortForward|TestPodMetricsFollowCPUAndMemory|TestUserNamespacePod)$'
VMTEST_RUN=${VMTEST_RUN:-$VMTEST_RUN_DEFAULT}
VMTEST_OUT=${VMTEST_OUT:-$VM_OUT/vmtest}
BIN=$VM_ROOT/bin
IT=$VMTEST_OUT/integration.test

STEPS=(
	"smoke|test/vm/smoke.sh"
	"integration|cd test/integration && MINICRI_BIN=$BIN/minicri MINICRI_PAUSE=$BIN/minicri-pause $IT -test.v -test.count=1 -test.timeout=40m -test.run '$VMTEST_RUN'"
)

mkdir -p "$VMTEST_OUT"
[ -x "$BIN/minicri" ] && [ -x "$BIN/minicri-pause" ] || vm_die "build first (make build): no $BIN/minicri or $BIN/minicri-pause"
vm_log "building the integration test binary on the host"
(cd "$VM_ROOT" && CGO_ENABLED=1 "$GO" test -c -tags seccomp -o "$IT" ./test/integration)

own=0
stop_own() { [ $own = 0 ] || "$VM_DIR/vm.sh" stop; }
trap stop_own EXIT
if ! vm_ready; then
	own=1
	"$VM_DIR/vm.sh" start
fi

summary=$VMTEST_OUT/summary.txt
: >"$summary"
failed=0
for s in "${STEPS[@]}"; do
	name=${s%%|*}
	cmd=${s#*|}
	if [ -n "${VMTEST_STEPS:-}" ] && [[ " $VMTEST_STEPS " != *" $name "* ]]; then continue; fi
	vm_log "==> $name: $cmd"
	start=$(date +%s)
	rc=0
	(cd "$VM_ROOT" && "$VM_DIR/run.sh" bash -c "$cmd") 2>&1 | tee "$VMTEST_OUT/$name.log" || rc=$?
	line="$name: $([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)") in $(($(date +%s) - start))s"
	vm_log "<== $line"
	echo "$line" >>"$summary"
	if [ $rc != 0 ]; then
		failed=1
		grep -E '^--- FAIL' "$VMTEST_OUT/$name.log" | sed 's/^/    /' >>"$summary" || true
	fi
done
echo "--- vmtest summary ($summary)"
cat "$summary"
exit $failed
