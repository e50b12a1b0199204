#!/usr/bin/env bash
# test/vm/vmtest.sh — `make vmtest-ci` (CI's VM subset) and `make vmtest` (VMTEST_FULL=1:
# everything): boots the VM lab, runs the steps below in the guest
# one after the other (each timed, all run even after a failure), stops the guest and
# exits 1 if any step failed. Binaries are built on the host (by make: bin/minicri,
# bin/minicri-pause, bin/minicri-monitor, bin/minicri-monitor-helper; here: the integration test binary) and only run in the guest.
#
# Adding a step is one line in STEPS: "name|command run in the guest from the checkout".
#
# Environment:
#   VMTEST_FULL=1  what CI cannot afford: every integration test (VMTEST_RUN=.) and every
#                  critest spec (step critest-vm-full instead of critest-vm, gated on
#                  test/critest/must-pass-vm)
#   VMTEST_RUN     the integration tests to run (a -test.run regexp; default: CI's subset
#                  VMTEST_RUN_CI, or all with VMTEST_FULL=1)
#   VMTEST_STEPS   the names of the steps to run (default: all), e.g. "smoke integration"
#   VMTEST_OUT     where logs go (default _output/vmtest); a summary in $VMTEST_OUT/summary.txt
#                  (two runs at once need two VMTEST_OUTs, and `vm.sh start` first)
#   VMTEST_CRITEST_FOCUS  the critest-vm subset (a -ginkgo.focus regexp)
#   VMTEST_TOOLS   critest and crictl (default _output/tools: make deps)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
GO=${GO:-go}

# CI's integration subset: what differs on a real node's shape (cgroup v2 only, systemd as
# PID 1, AppArmor enforcing, Debian 12's kernel), so that the phase fits CI's hour next to
# the rest of make test: the cgroup v2 and systemd-driver tests (TestCgroup*: RuntimeConfig's
# driver, OOM reason, working set under page cache, slice parents, a killed service sparing
# pods, oom_score_adj; cgroup_mount_mode READ_WRITE delegating a container's cgroup and
# cgroupns_options CONTAINER/NODE: TestCgroupReadWriteDelegates, TestCgroupNamespaceOptions,
# TestCgroupOptionRefusals), AppArmor (TestAppArmor.*: profiles, and
# TestAppArmorRestoredTasksGetTheRequestsProfile: a restored task runs under the request's
# profile, a foreign label is refused, issue 24), monitors outliving the service, OOM, the container
# lifecycle and its cgroup, the v2 stats (available/swap/io, pod pressure), a runc-handler
# pod (runc with systemd cgroups on v2), user namespaces and idmapped mounts on the node's
# kernel. The tests that behave the same on the host (pod networking, exec/attach/port-forward,
# bad input, restarts, CDI...) run there in make integration; `make vmtest` runs them all
# here too (VMTEST_FULL=1).
VMTEST_RUN_CI='^(TestCgroup.*|TestAppArmor.*|TestMonitorsOutliveTheService|TestContainerLifecycleLogsAndLeaks|TestOOMKillIsReported|TestRuncHandlerRunsContainersThroughRunc|TestUserNamespacePod|TestIDMappedMounts|TestContainerStatsAvailableSwapAndIO|TestPodSandboxStatsAvailableAndPressure)$'
FULL=${VMTEST_FULL:-0}
if [ "$FULL" = 1 ]; then VMTEST_RUN=${VMTEST_RUN:-.}; else VMTEST_RUN=${VMTEST_RUN:-$VMTEST_RUN_CI}; fi
VMTEST_OUT=${VMTEST_OUT:-$VM_OUT/vmtest}
# The critest-vm subset (CI): the areas a real node's shape changes (AppArmor, OOM under
# cgroup v2, RuntimeConfig's cgroup driver); the pod and container lifecycle and privileged
# specs run on the host in make critest, and here in `make vmtest`.
VMTEST_CRITEST_FOCUS=${VMTEST_CRITEST_FOCUS:-'AppArmor|Container OOM|Runtime info'}
TOOLS=${VMTEST_TOOLS:-$VM_OUT/tools}
# Binaries go to a directory of their own per run: a binary rewritten in place on the
# host can reach a running guest stale over 9p (seen: SIGSEGV).
BIN=$VMTEST_OUT/bin-$(date +%s)
IT=$BIN/integration.test
CRITEST_ENV="MINICRI=$BIN/minicri CRICTL=$TOOLS/crictl CRITEST=$TOOLS/critest INSTANCE_REGISTRY_BIN=$BIN/registry CRITEST_JUNIT_SUMMARY=$BIN/junit-summary"

STEPS=(
	"smoke|test/vm/smoke.sh"
	"integration|cd test/integration && MINICRI_BIN=$BIN/minicri MINICRI_PAUSE=$BIN/minicri-pause $IT -test.v -test.count=1 -test.timeout=40m -test.run '$VMTEST_RUN'"
	"critest-vm|$CRITEST_ENV CRITEST_OUT=$VMTEST_OUT/critest-vm CRITEST_MUST_PASS=test/critest/must-pass-vm CRITEST_FOCUS='$VMTEST_CRITEST_FOCUS' test/critest/run.sh"
	# VMTEST_FULL=1 only (replaces critest-vm): every spec, ~25-40 min in the guest.
	"critest-vm-full|$CRITEST_ENV CRITEST_OUT=$VMTEST_OUT/critest-vm-full CRITEST_MUST_PASS=test/critest/must-pass-vm CRITEST_TIMEOUT=90m test/critest/run.sh"
	"systemd-restart|VMTEST_BIN=$BIN CRICTL=$TOOLS/crictl test/vm/systemd-restart.sh"
	"e2e-systemd|CRICTL=$TOOLS/crictl E2E_OUT=$VMTEST_OUT/e2e-systemd E2E_MODES=standalone E2E_CGROUP_DRIVER=systemd MINICRI=$BIN/minicri INSTANCE_REGISTRY_BIN=$BIN/registry test/e2e/run.sh"
)
SKIP_STEP=critest-vm-full
[ "$FULL" != 1 ] || SKIP_STEP=critest-vm

mkdir -p "$BIN"
# Older binary directories of this VMTEST_OUT (a concurrent run uses another VMTEST_OUT).
find "$VMTEST_OUT" -maxdepth 1 -name 'bin-*' ! -path "$BIN" -exec rm -rf {} + 2>/dev/null || true
for f in minicri minicri-pause minicri-monitor minicri-monitor-helper; do
	[ -x "$VM_ROOT/bin/$f" ] || vm_die "build first (make build): no $VM_ROOT/bin/$f"
	cp "$VM_ROOT/bin/$f" "$BIN/$f"
done
[ -x "$TOOLS/critest" ] && [ -x "$TOOLS/crictl" ] || vm_die "no $TOOLS/critest or crictl: run make deps (or set VMTEST_TOOLS)"
vm_log "building the test binaries on the host into $BIN"
(cd "$VM_ROOT" && CGO_ENABLED=1 "$GO" test -c -tags seccomp -o "$IT" ./test/integration &&
	"$GO" build -o "$BIN/registry" ./test/registry &&
	"$GO" build -o "$BIN/junit-summary" ./test/critest/junit)
# The kubelet and etcd for e2e-systemd: built (or found in /var/cache/minicri-tools) on
# the host; the guest finds the same cache.
if [ -z "${VMTEST_STEPS:-}" ] || [[ " $VMTEST_STEPS " == *" e2e-systemd "* ]]; then
	"$VM_ROOT/test/e2e/tools.sh" "$VMTEST_OUT/e2e-tools" >/dev/null
fi

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
	if [ -n "${VMTEST_STEPS:-}" ]; then
		[[ " $VMTEST_STEPS " == *" $name "* ]] || continue
	elif [ "$name" = "$SKIP_STEP" ]; then
		continue
	fi
	vm_log "==> $name: $cmd"
	start=$(date +%s)
	rc=0
	(cd "$VM_ROOT" && "$VM_DIR/run.sh" bash -c "$cmd") 2>&1 | tee "$VMTEST_OUT/$name.log" || rc=$?
	line="$name: $([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)") in $(($(date +%s) - start))s"
	vm_log "<== $line"
	echo "$line" >>"$summary"
	if [ $rc != 0 ]; then
		failed=1
		# Go test failures, and critest's failed specs by name (CI shows only the tail).
		awk '/^--- FAIL|critest: FAIL|^must-pass: /{print; next}
			/^failed \(|^FAIL: /{f=1} /^$/{f=0} f' "$VMTEST_OUT/$name.log" | head -40 | sed 's/^/    /' >>"$summary" || true
	fi
done
echo "--- vmtest summary ($summary)"
cat "$summary"
exit $failed
