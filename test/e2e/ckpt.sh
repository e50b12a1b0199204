# shellcheck shell=bash
# test/e2e/ckpt.sh — the checkpoint/restore case of cluster mode (sourced by run.sh).
#
# A counter pod (manifests/ckpt-counter.yaml) is checkpointed through the kubelet's
# checkpoint API (POST /checkpoint/{namespace}/{pod}/{container} on its HTTPS port, the
# ContainerCheckpoint feature gate): the kubelet calls minicri's CheckpointContainer, which
# writes the archive under <kubelet root>/checkpoints. test/e2e/ckptimage packages the
# archive as an OCI image as buildah/checkpointctl do (one layer: the archive's files; the
# io.kubernetes.cri-o.annotations.checkpoint.name annotation) and pushes it to the run's
# offline registry (test/registry: go-containerregistry's in-memory registry takes pushes).
# The source pod is deleted; a new pod whose image is the checkpoint image
# (manifests/ckpt-restored.yaml) must go on counting from the checkpointed value.

# ckpt_last_count POD: the last "count N" its counter logged (empty if none).
ckpt_last_count() { kubectl logs "$1" -c counter 2>/dev/null | awk '$1 == "count" { n = $2 } END { print n }'; }

# ckpt_first_count POD: the first "count N" its counter logged (empty if none).
ckpt_first_count() { kubectl logs "$1" -c counter 2>/dev/null | awk '$1 == "count" && !f { print $2; f = 1 }'; }

# ckpt_counted POD N: the counter logged N or more.
ckpt_counted() { local n; n=$(ckpt_last_count "$1"); [ -n "$n" ] && [ "$n" -ge "$2" ]; }

# ckpt_archive_has ARCHIVE NAME...: the tar archive has an entry for every NAME.
ckpt_archive_has() {
	local list name
	list=$(tar -tf "$1") || return 1
	shift
	for name in "$@"; do
		grep -qxF -- "$name" <<<"$list" || { e2e_log "no $name in the archive"; return 1; }
	done
}

# ckpt_registry_host: host:port of the run's offline registry (from its start log line
# "serving N references on http://127.0.0.1:PORT").
ckpt_registry_host() {
	grep -o 'serving [0-9]* references on http://[0-9.:]*' "$INSTANCE_TMP/registry.log" | sed 's|.*http://||' | tail -n 1
}

# ckpt_kubelet_checkpoint NAMESPACE POD CONTAINER: the kubelet's checkpoint API, with the
# admin client certificate (the kubelet authenticates x509 clients of the suite's CA);
# prints the kubelet's answer ({"items":["<archive path>"]}).
ckpt_kubelet_checkpoint() {
	curl -sS --fail-with-body --max-time 120 -X POST --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$KUBELET_PORT/checkpoint/$1/$2/$3?timeout=60"
}

# checkpoint_restore_check: the case (cluster mode; the kubelet is registered, KUBECONFIG
# is the admin's). The pods are deleted with the others by mode_cluster.
checkpoint_restore_check() {
	local t0 tc before after resp archive reg image out first n ckdir=$E2E_TMP/kubelet-cluster/root/checkpoints
	case ",${E2E_FEATURE_GATES:-}," in *,ContainerCheckpoint=false,*)
		e2e_log "ContainerCheckpoint=false: checkpoint case not run"
		return 0
		;;
	esac
	t0=$(e2e_now)
	if ! go build -o "$E2E_TMP/e2e-ckptimage" ./test/e2e/ckptimage >"$E2E_TMP/ckptimage-build.log" 2>&1; then
		fail "build test/e2e/ckptimage" "$(tail -n 5 "$E2E_TMP/ckptimage-build.log")"
		return 1
	fi
	kubectl apply -f "$E2E_DIR/manifests/ckpt-counter.yaml" >/dev/null
	check "checkpoint: pod e2e-ckpt Ready" kubectl wait --for=condition=Ready pod/e2e-ckpt --timeout=120s >/dev/null || return 1
	check "checkpoint: the counter counts (count 10 logged)" wait_for 30 ckpt_counted e2e-ckpt 10 || return 1

	before=$(ckpt_last_count e2e-ckpt)
	tc=$(e2e_now)
	if ! resp=$(ckpt_kubelet_checkpoint default e2e-ckpt counter 2>&1); then
		fail "checkpoint: POST /checkpoint/default/e2e-ckpt/counter on the kubelet" "$resp"
		return 1
	fi
	timing "cluster: kubelet checkpoint API -> archive written (CRIU dump, running counter)" "$(e2e_since "$tc")"
	after=$(ckpt_last_count e2e-ckpt)
	pass "checkpoint: POST /checkpoint/default/e2e-ckpt/counter on the kubelet: $resp"
	archive=$(sed -n 's/^{"items":\["\(.*\)"\]}$/\1/p' <<<"$resp")
	check "checkpoint: the archive is in the kubelet's checkpoints dir ($archive)" \
		eval '[ "$(dirname "$archive")" = "$ckdir" ] && [ -f "$archive" ]' || return 1
	check "checkpoint: the archive holds config.dump, spec.dump, rootfs-diff.tar and CRIU images" \
		ckpt_archive_has "$archive" config.dump spec.dump rootfs-diff.tar checkpoint/inventory.img || return 1
	check "checkpoint: the source counter still runs after the checkpoint" wait_for 10 ckpt_counted e2e-ckpt $((after + 3))
	# The source goes away: the restored pod depends on the image only.
	kubectl delete pod e2e-ckpt --wait=false >/dev/null || true

	reg=$(ckpt_registry_host)
	image=registry.k8s.io/minicri-e2e/checkpoint-counter:e2e$E2E_IDX
	if ! out=$("$E2E_TMP/e2e-ckptimage" -archive "$archive" -container counter -ref "$reg/minicri-e2e/checkpoint-counter:e2e$E2E_IDX" 2>&1); then
		fail "checkpoint: archive packaged as an OCI image and pushed to the offline registry ($reg)" "$out"
		return 1
	fi
	pass "checkpoint: archive packaged as $image ($out) and pushed to the offline registry ($reg)"

	tc=$(e2e_now)
	sed "s|@IMAGE@|$image|" "$E2E_DIR/manifests/ckpt-restored.yaml" | kubectl apply -f - >/dev/null
	if check "restore: pod e2e-restored (image: the checkpoint) Ready" \
		kubectl wait --for=condition=Ready pod/e2e-restored --timeout=120s >/dev/null; then
		timing "cluster: restored pod apply -> Ready (pull of the checkpoint image, CRIU restore)" "$(e2e_since "$tc")"
	else
		kubectl describe pod e2e-restored >&2 || true
		return 1
	fi
	check "restore: the restored counter goes on counting" wait_for 20 eval 'first=$(ckpt_first_count e2e-restored); [ -n "$first" ] && ckpt_counted e2e-restored $((first + 5))'
	first=$(ckpt_first_count e2e-restored)
	check "restore: the counter continues from the checkpoint (first count $first; checkpoint taken between $before and $after)" \
		eval '[ -n "$first" ] && [ "$first" -gt 0 ] && [ "$first" -ge "$before" ] && [ "$first" -le $((after + 1)) ]' ||
		e2e_log "restored pod's log: $(kubectl logs e2e-restored -c counter 2>&1 | head -n 5 | tr '\n' ' ')"
	n=$(timeout 60 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" exec e2e-restored -c counter -- cat /count 2>&1) || true
	check "restore: /count (a rootfs change) came with the checkpoint (kubectl exec: $n)" \
		eval '[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge "$before" ]'
	check "restore: the restored container never restarted" \
		test "$(pod_field e2e-restored '{.status.containerStatuses[0].restartCount}')" = 0
	# Stop works as for any container (the kubelet: SIGTERM, then SIGKILL after the 1s grace).
	tc=$(e2e_now)
	kubectl delete pod e2e-restored --wait=false >/dev/null || true
	if check "restore: kubectl delete stops the restored container within 30s" \
		wait_for 30 eval '[ "$(running_containers io.kubernetes.pod.name=e2e-restored)" = 0 ]'; then
		timing "cluster: restored pod delete -> container stopped" "$(e2e_since "$tc")"
	fi
	timing "cluster: checkpoint case (counter pod, kubelet checkpoint, image push, restore, stop)" "$(e2e_since "$t0")"
}
