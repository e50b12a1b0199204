#!/usr/bin/env bash
# Installs what minicri needs to build, run and test it on Debian 12, as root.
# Idempotent and fast when everything is already there: every step checks first.
#
#   apt packages   only the missing ones (dpkg status check)
#   CNI plugins    bridge host-local portmap loopback $CNI_VERSION -> $CNI_BIN_DIR (version stamp)
#   cri-tools      critest + crictl $CRI_TOOLS_VERSION -> $TOOLS_DIR (version stamp)
#
# Go-built tools are cached in $CACHE_DIR so another run on the same machine copies
# instead of building; the cache is only an accelerator (missing/incomplete -> rebuild).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CNI_VERSION=${CNI_VERSION:-v1.10.0}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.37.0}
CNI_BIN_DIR=${CNI_BIN_DIR:-/opt/cni/bin}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/_output/tools}
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}

APT_PACKAGES=(iptables nftables iproute2 libseccomp-dev pkg-config gcc libc6-dev)
CNI_PLUGINS=(bridge host-local portmap loopback)
CRI_TOOLS=(critest crictl)

CLEANUP=()
cleanup() {
	local d
	for d in "${CLEANUP[@]}"; do chmod -R u+w "$d" 2>/dev/null || true; rm -rf "$d"; done
}
trap cleanup EXIT

log() { echo "deps: $*"; }
die() { echo "deps: ERROR: $*" >&2; exit 1; }

# all_present DIR NAME... : every NAME is an executable file in DIR
all_present() {
	local dir=$1 f
	shift
	for f in "$@"; do [ -x "$dir/$f" ] || return 1; done
}

# stamp_is FILE VERSION
stamp_is() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# install_into DIR SRC_DIR NAME... : atomic per file (temp + rename), so a running
# process never sees a half-written binary and "text file busy" cannot happen.
install_into() {
	local dst=$1 src=$2 f
	shift 2
	mkdir -p "$dst"
	for f in "$@"; do
		install -m 0755 "$src/$f" "$dst/.$f.tmp.$$"
		mv -f "$dst/.$f.tmp.$$" "$dst/$f"
	done
}

# cache_put NAME SRC_DIR FILE... : best effort; a read-only or full cache is not an error.
cache_put() {
	local name=$1 src=$2 dir="$CACHE_DIR/$1"
	shift 2
	{
		rm -rf "$dir.tmp.$$" &&
			mkdir -p "$dir.tmp.$$" &&
			cp "${@/#/$src/}" "$dir.tmp.$$/" &&
			echo "$name" >"$dir.tmp.$$/.complete" &&
			rm -rf "$dir" && mv "$dir.tmp.$$" "$dir"
	} 2>/dev/null || { rm -rf "$dir.tmp.$$" 2>/dev/null || true; log "note: could not write cache $dir"; }
}

# cache_ok NAME FILE... : complete cache entry
cache_ok() {
	local name=$1 dir="$CACHE_DIR/$1"
	shift
	stamp_is "$dir/.complete" "$name" && all_present "$dir" "$@"
}

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (run as root)"; }

ensure_go() {
	if ! command -v "$GO" >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH=$PATH:/usr/local/go/bin
		else
			die "no Go toolchain: install Go >= 1.26.8 (e.g. in /usr/local/go)"
		fi
	fi
}

deps_apt() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	need_root "apt-get install ${missing[*]}"
	log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

deps_cni() {
	local stamp="$CNI_BIN_DIR/.minicri-cni-plugins" want="cni-plugins-$CNI_VERSION"
	if stamp_is "$stamp" "$want" && all_present "$CNI_BIN_DIR" "${CNI_PLUGINS[@]}"; then
		return 0
	fi
	need_root "installing CNI plugins into $CNI_BIN_DIR"
	if cache_ok "$want" "${CNI_PLUGINS[@]}"; then
		log "CNI plugins $CNI_VERSION: copying from $CACHE_DIR/$want"
		install_into "$CNI_BIN_DIR" "$CACHE_DIR/$want" "${CNI_PLUGINS[@]}"
	else
		ensure_go
		log "CNI plugins $CNI_VERSION: building ${CNI_PLUGINS[*]}"
		local tmp p pkgs=()
		tmp=$(mktemp -d /tmp/minicri-deps-cni.XXXXXX)
		CLEANUP+=("$tmp")
		for p in "${CNI_PLUGINS[@]}"; do
			case $p in
			host-local) pkgs+=("github.com/containernetworking/plugins/plugins/ipam/$p") ;;
			portmap) pkgs+=("github.com/containernetworking/plugins/plugins/meta/$p") ;;
			*) pkgs+=("github.com/containernetworking/plugins/plugins/main/$p") ;;
			esac
		done
		(
			cd "$tmp"
			export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0 GOWORK=off
			"$GO" mod init x >/dev/null 2>&1
			"$GO" get "github.com/containernetworking/plugins@$CNI_VERSION" >/dev/null 2>&1 ||
				"$GO" get "github.com/containernetworking/plugins@$CNI_VERSION"
			mkdir -p out
			"$GO" build -trimpath -o out/ \
				-ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_VERSION" \
				"${pkgs[@]}"
		)
		all_present "$tmp/out" "${CNI_PLUGINS[@]}" || die "CNI plugin build produced no binaries"
		cache_put "$want" "$tmp/out" "${CNI_PLUGINS[@]}"
		install_into "$CNI_BIN_DIR" "$tmp/out" "${CNI_PLUGINS[@]}"
	fi
	echo "$want" >"$stamp"
	log "CNI plugins $CNI_VERSION installed in $CNI_BIN_DIR"
}

deps_cri_tools() {
	local stamp="$TOOLS_DIR/.cri-tools" want="cri-tools-$CRI_TOOLS_VERSION"
	if stamp_is "$stamp" "$want" && all_present "$TOOLS_DIR" "${CRI_TOOLS[@]}"; then
		return 0
	fi
	if cache_ok "$want" "${CRI_TOOLS[@]}"; then
		log "cri-tools $CRI_TOOLS_VERSION: copying from $CACHE_DIR/$want"
		install_into "$TOOLS_DIR" "$CACHE_DIR/$want" "${CRI_TOOLS[@]}"
	else
		ensure_go
		log "cri-tools $CRI_TOOLS_VERSION: building critest and crictl"
		local tmp src
		tmp=$(mktemp -d /tmp/minicri-deps-cri-tools.XXXXXX)
		CLEANUP+=("$tmp")
		# Build from the module's own go.mod/go.sum (the versions cri-tools' release uses;
		# the module zip carries no vendor/ dir, so no -mod=vendor as in its Makefile).
		src=$(cd "$tmp" && GOFLAGS='' "$GO" mod download -json "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -d "$src" ] || die "go mod download sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION failed"
		cp -r "$src" "$tmp/src"
		chmod -R u+w "$tmp/src"
		(
			cd "$tmp/src"
			export GOFLAGS="-mod=readonly -trimpath" CGO_ENABLED=0 GOWORK=off
			ldflags="-X sigs.k8s.io/cri-tools/pkg/version.Version=${CRI_TOOLS_VERSION#v}"
			# critest is a Ginkgo test binary, built as cri-tools' Makefile does: go test -c.
			"$GO" test -c -o "$tmp/out/critest" -ldflags "$ldflags" ./cmd/critest
			"$GO" build -o "$tmp/out/crictl" -ldflags "$ldflags" ./cmd/crictl
		)
		all_present "$tmp/out" "${CRI_TOOLS[@]}" || die "cri-tools build produced no binaries"
		cache_put "$want" "$tmp/out" "${CRI_TOOLS[@]}"
		install_into "$TOOLS_DIR" "$tmp/out" "${CRI_TOOLS[@]}"
	fi
	echo "$want" >"$stamp"
	log "critest and crictl $CRI_TOOLS_VERSION in $TOOLS_DIR"
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(apt cni cri-tools)
for s in "${steps[@]}"; do
	case $s in
	apt) deps_apt ;;
	cni) deps_cni ;;
	cri-tools) deps_cri_tools ;;
	*) die "unknown step $s (apt, cni, cri-tools)" ;;
	esac
done
