# shellcheck shell=bash
# test/e2e/toolslib.sh — build a Go command through a wrapper module, cached by a key of the
# wrapper's go.mod/go.sum, the link flags and Go (sourced by test/e2e/tools.sh and
# test/cluster/tools.sh and test/conformance/tools.sh). Needs ROOT, CACHE_DIR, GO and LOG set.

log() { echo "e2e-tools: $*" >&2; }

# key WRAPPER_DIR LDFLAGS: changes whenever the pinned versions (go.mod/go.sum), the
# flags or Go change.
key() {
	{ cat "$1/go.mod" "$1/go.sum"; echo "$2"; "$GO" env GOVERSION GOARCH; } | sha256sum | cut -c1-12
}

# ensure NAME WRAPPER_DIR LDFLAGS PKG... : prints the directory holding the built commands
# (go build of each PKG). TOOLS_TAGS (optional): build tags, part of the key when set.
ensure() {
	local name=$1 wrapper=$2 ld=$3 files=() p
	shift 3
	_ensure_pkgs=("$@")
	for p in "$@"; do files+=("$(cmdname "$p")"); done
	ensure_with build_pkgs "$name" "$wrapper" "$ld" "${files[@]}"
}

# build_pkgs TMP LDFLAGS: ensure's builder (go build of _ensure_pkgs into TMP).
build_pkgs() {
	"$GO" build -trimpath -tags="${TOOLS_TAGS:-}" -ldflags="$2" -o "$1/" "${_ensure_pkgs[@]}"
}

# ensure_with BUILDER NAME WRAPPER_DIR LDFLAGS FILE... : prints the directory holding FILE...,
# built by `BUILDER TMP "-s -w LDFLAGS"` (run in WRAPPER_DIR with GOFLAGS=-mod=readonly,
# output to LOG) into a temporary directory and cached in CACHE_DIR/NAME-<key> (a missing,
# incomplete or stale entry is rebuilt; an unwritable cache builds into _output/e2e).
# TOOLS_TAGS and TOOLS_KEY_EXTRA (a hash of sources outside go.mod/go.sum), when set, are
# part of the key.
ensure_with() {
	local builder=$1 name=$2 wrapper=$3 ldflags="-s -w $4" k dir tmp start files=() f tags=${TOOLS_TAGS:-}
	shift 4
	files=("$@")
	k=$(key "$wrapper" "$ldflags${tags:+ tags=$tags}${TOOLS_KEY_EXTRA:+ extra=$TOOLS_KEY_EXTRA}")
	dir=$CACHE_DIR/$name-$k
	# One build of an entry at a time: a second caller (make test's background prebuild and
	# the phase that needs the tools) waits here for the first, then finds the entry
	# complete. ensure_with runs in a subshell ($(...)): the lock goes with it.
	if mkdir -p "$CACHE_DIR" 2>/dev/null && exec {lockfd}>>"$CACHE_DIR/.$name.lock"; then
		flock "$lockfd"
	fi
	if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$name-$k" ]; then
		local ok=1
		for f in "${files[@]}"; do [ -x "$dir/$f" ] || ok=0; done
		if [ $ok = 1 ]; then
			log "$name: cached in $dir"
			echo "$dir"
			return 0
		fi
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/e2e-build.XXXXX")
	# A build stopped half-way (make test's prebuild is killed when the run ends) leaves no
	# ~1 GB directory behind; once moved into the cache, the path is gone and this is a no-op.
	# Every caller runs ensure_with in $(...), so the trap is the subshell's; $tmp is expanded
	# now (a local, gone when the trap fires).
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	trap 'exit 143' TERM INT HUP
	log "$name: building ${files[*]} (log: $LOG); the first cold build takes long"
	start=$(date +%s)
	if ! (cd "$wrapper" && GOFLAGS=-mod=readonly "$builder" "$tmp" "$ldflags") >>"$LOG" 2>&1; then
		tail -n 30 "$LOG" >&2
		rm -rf "$tmp"
		log "$name: build FAILED after $(($(date +%s) - start))s"
		return 1
	fi
	log "$name: built in $(($(date +%s) - start))s"
	echo "$name-$k" >"$tmp/.complete"
	chmod 0755 "$tmp"
	if mkdir -p "$CACHE_DIR" 2>/dev/null && rm -rf "$dir.tmp.$$" && cp -a "$tmp" "$dir.tmp.$$" 2>/dev/null &&
		rm -rf "$dir" && mv "$dir.tmp.$$" "$dir"; then
		rm -rf "$tmp"
		# Older builds of the same tool are dead weight (each is ~400 MB).
		find "$CACHE_DIR" -maxdepth 1 -name "$name-*" ! -name "$name-$k" -exec rm -rf {} + 2>/dev/null || true
		echo "$dir"
	else
		rm -rf "$dir.tmp.$$" 2>/dev/null || true
		log "note: could not write cache $dir; using $ROOT/_output/e2e/$name-$k"
		mkdir -p "$ROOT/_output/e2e"
		rm -rf "$ROOT/_output/e2e/$name-$k"
		mv "$tmp" "$ROOT/_output/e2e/$name-$k"
		echo "$ROOT/_output/e2e/$name-$k"
	fi
}

# cmdname PKG: the binary name go build gives a main package (etcd's is server/v3 -> "v3"
# would be wrong: go build names it after the last non-version element, "server").
cmdname() {
	case $1 in
	go.etcd.io/etcd/server/v3) echo server ;;
	*) basename "$1" ;;
	esac
}

