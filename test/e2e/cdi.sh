# shellcheck shell=bash
# test/e2e/cdi.sh — the CDI device plugin case of cluster mode (sourced by run.sh).
#
# Extended resources need the scheduler and the node's capacity in the API server, so
# this runs in cluster mode only. The suite's device plugin (test/e2e/deviceplugin)
# writes a CDI spec into minicri's spec dir ($E2E_CDI_DIR, INSTANCE_CDI_DIR), registers
# minicri.test/cdidev with the kubelet and answers Allocate with the CDI device name;
# the pod must see the device node (a /dev/null clone, written to) and the env.

# cdi_device_plugin_check KUBELET_LOG
cdi_device_plugin_check() {
	local klog=$1 node=$E2E_TMP/cdi-null t0 dir
	# The kubelet's registration socket (/var/lib/kubelet/device-plugins/kubelet.sock
	# whatever its --root-dir), as it logged it.
	dir=$(grep -o 'Creating device plugin registration server.*socket="[^"]*"' "$klog" | head -n 1 | sed 's/.*socket="//; s/"$//')
	dir=${dir%/kubelet.sock}
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		fail "the kubelet logged its device plugin socket" "got '$dir'"
		return 1
	fi
	if ! go build -o "$E2E_TMP/e2e-deviceplugin" ./test/e2e/deviceplugin >"$E2E_TMP/deviceplugin-build.log" 2>&1; then
		fail "build test/e2e/deviceplugin" "$(tail -n 5 "$E2E_TMP/deviceplugin-build.log")"
		return 1
	fi
	rm -f "$node"
	mknod -m 0666 "$node" c 1 3
	proc_start deviceplugin "$E2E_TMP/deviceplugin.log" "$E2E_TMP/e2e-deviceplugin" \
		-plugin-dir "$dir" -cdi-dir "$E2E_CDI_DIR" -host-node "$node"
	check "device plugin: node capacity minicri.test/cdidev = 1" \
		wait_for 60 eval '[ "$(kubectl get node "$NODE_NAME" -o "jsonpath={.status.allocatable.minicri\.test/cdidev}")" = 1 ]' || return 1
	t0=$(e2e_now)
	kubectl apply -f "$E2E_DIR/manifests/cdi.yaml" >/dev/null
	if check "pod e2e-cdi (limits minicri.test/cdidev: 1) Running" \
		kubectl wait --for=condition=Ready pod/e2e-cdi --timeout=120s >/dev/null; then
		timing "cluster: CDI pod apply -> Ready" "$(e2e_since "$t0")"
	else
		kubectl describe pod e2e-cdi >&2 || true
		return 1
	fi
	check "device plugin answered Allocate with the CDI name" grep -q 'Allocate .* -> minicri.test/e2e=dev0' "$E2E_TMP/deviceplugin.log"
	check "CDI env E2E_CDI reaches the container" wait_for 20 output_has '^env=injected-by-cdi$' kubectl logs e2e-cdi
	check "CDI device node /dev/e2e-cdi-null is char 1:3 in the container" output_has '^node=character special file 1:3$' kubectl logs e2e-cdi
	check "CDI device node is usable (written to)" output_has '^node-written$' kubectl logs e2e-cdi
}
