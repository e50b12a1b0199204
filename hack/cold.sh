#!/usr/bin/env bash
# hack/cold.sh — proves the cold path: puts this machine back to what a fresh one has, then
# runs CI (.ci/run) on a fresh clone of this checkout's HEAD, as CI would.
#
#   hack/cold.sh [-n]   (-n: only print what it would remove)
#
# It removes what make deps and the test phases installed or cached: the Debian packages
# apt installed since COLD_SINCE (default: this machine's boot, `uptime -s`; the image's own
# packages are older), minicri's trixie deb-src entry, /opt/cni/bin, the tool cache
# (/var/cache/minicri-tools), the Go build and module caches. Then `git clone` of HEAD into
# COLD_DIR (default /tmp/minicri-cold) and `CI=true bash .ci/run` there, its output in
# COLD_DIR.log. Never run it where other work of yours needs those packages or caches.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/goenv.sh"
SINCE=${COLD_SINCE:-$(uptime -s)}
DIR=${COLD_DIR:-/tmp/minicri-cold}
DRY=0
[ "${1:-}" = -n ] && DRY=1
[ "$(id -u)" = 0 ] || { echo "cold: needs root" >&2; exit 1; }

# installed_since: the packages of apt's history entries that started at or after SINCE.
installed_since() {
	awk -v since="$SINCE" '
		/^Start-Date:/ { d = $2 " " $3; on = (d >= since) }
		on && /^Install:/ {
			sub(/^Install: /, "")
			n = split($0, parts, /\), /)
			for (i = 1; i <= n; i++) { p = parts[i]; sub(/ \(.*/, "", p); sub(/:.*/, "", p); print p }
		}' /var/log/apt/history.log | sort -u
}

mapfile -t pkgs < <(installed_since)
echo "cold: since $SINCE: ${#pkgs[@]} packages: ${pkgs[*]}"
paths=(/opt/cni/bin /var/cache/minicri-tools /etc/apt/sources.list.d/minicri-trixie-src.list
	"$(go env GOMODCACHE)" "$(go env GOCACHE)" "$DIR" "$DIR.log")
echo "cold: and ${paths[*]}"
[ $DRY = 1 ] && exit 0

if [ ${#pkgs[@]} -gt 0 ]; then
	# SUDO_FORCE_REMOVE: sudo's prerm refuses when root has no password (this machine's case)
	DEBIAN_FRONTEND=noninteractive SUDO_FORCE_REMOVE=yes apt-get purge -y -qq "${pkgs[@]}" >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null
fi
go clean -cache -modcache 2>/dev/null || true
rm -rf "${paths[@]}"
git clone -q "$ROOT" "$DIR"
git -C "$DIR" log -1 --format='cold: %h %s'
cd "$DIR"
start=$(date +%s)
rc=0
CI=true bash .ci/run >"$DIR.log" 2>&1 || rc=$?
echo "cold: .ci/run exit $rc after $(($(date +%s) - start))s (log: $DIR.log)"
exit $rc
