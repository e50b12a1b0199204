#!/usr/bin/env bash
# Installs what minicri needs to build, run and test it on Debian 12, as root.
# Idempotent and fast when everything is already there: every step checks first.
#
#   apt packages   only the missing ones (dpkg status check)
#   CNI plugins    bridge host-local portmap loopback $CNI_VERSION -> $CNI_BIN_DIR (version stamp)
#   cri-tools      critest + crictl $CRI_TOOLS_VERSION -> $TOOLS_DIR (version stamp)
#   golangci-lint  $GOLANGCI_LINT_VERSION -> $TOOLS_DIR (version stamp), for `make lint`
#   criu           CRIU >= 4.1 for CheckpointContainer (version check + `criu check`).
#                  Debian 12's criu 3.17 cannot run on kernels >= 6.13 (criu#2532), so
#                  CRIU is built here from Debian 13's criu=$CRIU_DEB_VERSION source: a
#                  deb-src-only trixie entry in its own sources file (no binary package
#                  ever comes from trixie), build deps from bookworm, packaged as a .deb
#                  (cached in $CACHE_DIR/criu-<version>-<rev>), installed with apt-get,
#                  with hack/criu-*.patch applied (CRIU_PATCHES).
#
# Go-built tools are cached in $CACHE_DIR so another run on the same machine copies
# instead of building; the cache is only an accelerator (missing/incomplete -> rebuild).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CNI_VERSION=${CNI_VERSION:-v1.10.0}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.37.0}
GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
CNI_BIN_DIR=${CNI_BIN_DIR:-/opt/cni/bin}
TOOLS_DIR=${TOOLS_DIR:-$ROOT/_output/tools}
CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
GO=${GO:-go}
CRIU_DEB_VERSION=${CRIU_DEB_VERSION:-4.1.1-1} # the Debian 13 source package
CRIU_VERSION=${CRIU_DEB_VERSION%%-*}
CRIU_MIN_VERSION=4.1
# Our package revision: minicri2 adds hack/criu-sockopts-linux-6.16.patch (CRIU 4.1 cannot
# dump a TCP/UDP socket on Linux >= 6.16; fixed upstream in 4.2).
CRIU_PKG_REV=minicri2
CRIU_PATCHES=("$ROOT/hack/criu-sockopts-linux-6.16.patch")
CRIU_SOURCES=/etc/apt/sources.list.d/minicri-trixie-src.list

# What each phase runs, and what provides it: hack/needs.txt. `make deps` installs the Debian
# packages of the phases of `make test` and `make run` (DEFAULT_PHASES).
NEEDS=${MINICRI_NEEDS:-$ROOT/hack/needs.txt}
DEFAULT_PHASES=(deps build vet lint unit fuzz integration soak-ci critest e2e e2e-evented conformance-ci vmtest-ci run)
DAEMON_PHASES=(run integration soak-ci critest e2e e2e-evented conformance-ci vmtest-ci bench bench-scale bench-ckpt bench-ab bench-lazy cluster conformance vmtest soak)
# What `make criu` needs: the C part of trixie criu's Build-Depends, from bookworm.
CRIU_BUILD_DEPS=(build-essential dpkg-dev pkgconf python3 libbsd-dev libcap-dev libgnutls28-dev libnet1-dev
	libnftables-dev libnl-3-dev libprotobuf-c-dev libprotobuf-dev protobuf-c-compiler protobuf-compiler uuid-dev)
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

# ensure_go: a Go on PATH (any version that can fetch go.mod's toolchain, >= 1.21), and the
# toolchain go.mod names (hack/goenv.sh), fetched from the module proxy here if missing.
ensure_go() {
	# shellcheck source=hack/goenv.sh
	. "$ROOT/hack/goenv.sh"
	command -v "$GO" >/dev/null 2>&1 || die "no Go toolchain: install Go >= 1.21 (e.g. in /usr/local/go)"
	"$GO" version >/dev/null || die "cannot run Go $GOTOOLCHAIN (go.mod's toolchain; GOTOOLCHAIN=$GOTOOLCHAIN): the module proxy must serve golang.org/toolchain"
}

# needs_rows PHASE...: "PROGRAM PROVIDER" of every row of $NEEDS for one of PHASE...
# (pure bash: `check` must work with nothing but bash on PATH).
needs_rows() {
	local prog prov phases p want
	while read -r prog prov phases; do
		[ -n "$prog" ] && [ "${prog:0:1}" != "#" ] || continue
		phases=" ${phases%%#*} "
		phases=${phases// daemon / ${DAEMON_PHASES[*]} }
		for want in "$@"; do
			case $phases in *" $want "*) echo "$prog $prov"; break ;; esac
		done
	done <"$NEEDS"
}

# apt_packages PHASE...: the Debian packages those phases need, once each.
apt_packages() {
	local prog prov seen=" "
	while read -r prog prov; do
		[ "${prov:0:1}" = "@" ] && continue
		case $seen in *" $prov "*) continue ;; esac
		seen+="$prov "
		echo "$prov"
	done < <(needs_rows "$@")
}

# have PROGRAM PROVIDER: the program is where the phase will look for it.
have() {
	case $2 in
	@cri-tools | @golangci-lint) [ -x "$TOOLS_DIR/$1" ] ;;
	@cni) [ -x "$CNI_BIN_DIR/$1" ] ;;
	@bench-tools) [ -x "$ROOT/_output/bench/bin2/$1" ] ;; # hack/bench-tools.sh's default DIR
	@go) command -v "$GO" >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] ;;
	*)
		if [ "${1:0:1}" = / ]; then
			[ -e "$1" ] # a file: a header cgo includes
		else
			command -v "$1" >/dev/null 2>&1
		fi
		;;
	esac
}

# check PHASE: every program of PHASE is there; else one line naming what is missing and
# what provides it, and exit 1.
check() {
	local phase=$1 prog prov missing=() list
	while read -r prog prov; do
		if ! have "$prog" "$prov"; then
			case $prov in
			@bench-tools) missing+=("$prog (hack/bench-tools.sh)") ;;
			@*) missing+=("$prog (hack/deps.sh step ${prov#@})") ;;
			*) missing+=("$prog (package $prov)") ;;
			esac
		fi
	done < <(needs_rows "$phase")
	[ ${#missing[@]} -eq 0 ] && return 0
	list=$(printf ', %s' "${missing[@]}")
	echo "make $phase: missing ${list:2}: run make deps (hack/needs.txt)" >&2
	exit 1
}

# apt_install PACKAGE...: the missing ones, with no service started on this host while
# they install (policy-rc.d; the VM lab's systemd, dbus and apparmor are for its guest).
apt_install() {
	local missing=() p policy=/usr/sbin/policy-rc.d ours=0 rc=0
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	need_root "apt-get install ${missing[*]}"
	log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# minicri hack/deps.sh: no service starts while it installs packages\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		ours=1
		CLEANUP+=("$policy") # also when apt-get is interrupted: services must start again later
	fi
	{ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; } || rc=$?
	[ $ours = 1 ] && rm -f "$policy"
	[ $rc = 0 ] || die "apt-get install ${missing[*]} failed"
}

deps_apt() {
	local pkgs
	mapfile -t pkgs < <(apt_packages "${DEFAULT_PHASES[@]}")
	apt_install "${pkgs[@]}"
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


# module_src MODULE@VERSION TMP: a writable copy of the module's source in TMP/src, from
# the Go module proxy.
module_src() {
	local src
	src=$(cd "$2" && GOFLAGS='' "$GO" mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || die "go mod download $1 failed"
	cp -r "$src" "$2/src"
	chmod -R u+w "$2/src"
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
		local tmp
		tmp=$(mktemp -d /tmp/minicri-deps-cri-tools.XXXXXX)
		CLEANUP+=("$tmp")
		# Build from the module's own go.mod/go.sum (the versions cri-tools' release uses;
		# the module zip carries no vendor/ dir, so no -mod=vendor as in its Makefile).
		module_src "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION" "$tmp"
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

deps_golangci_lint() {
	local stamp="$TOOLS_DIR/.golangci-lint" want="golangci-lint-$GOLANGCI_LINT_VERSION"
	if stamp_is "$stamp" "$want" && all_present "$TOOLS_DIR" golangci-lint; then
		return 0
	fi
	if cache_ok "$want" golangci-lint; then
		log "golangci-lint $GOLANGCI_LINT_VERSION: copying from $CACHE_DIR/$want"
		install_into "$TOOLS_DIR" "$CACHE_DIR/$want" golangci-lint
	else
		ensure_go
		log "golangci-lint $GOLANGCI_LINT_VERSION: building from the Go module proxy"
		local tmp
		tmp=$(mktemp -d /tmp/minicri-deps-golangci-lint.XXXXXX)
		CLEANUP+=("$tmp")
		# Built from the module's own go.mod/go.sum (the versions its release uses), with the
		# Go that builds minicri, so it understands minicri's Go version.
		module_src "github.com/golangci/golangci-lint/v2@$GOLANGCI_LINT_VERSION" "$tmp"
		(
			cd "$tmp/src"
			export GOFLAGS="-mod=readonly -trimpath" CGO_ENABLED=0 GOWORK=off
			"$GO" build -o "$tmp/out/golangci-lint" \
				-ldflags "-s -w -X main.version=${GOLANGCI_LINT_VERSION#v} -X main.date=module-proxy" ./cmd/golangci-lint
		)
		all_present "$tmp/out" golangci-lint || die "golangci-lint build produced no binary"
		cache_put "$want" "$tmp/out" golangci-lint
		install_into "$TOOLS_DIR" "$tmp/out" golangci-lint
	fi
	echo "$want" >"$stamp"
	log "golangci-lint $GOLANGCI_LINT_VERSION in $TOOLS_DIR"
}

# criu_version: the version `criu --version` reports ("4.1.1"), empty if there is no criu.
criu_version() {
	command -v criu >/dev/null 2>&1 || return 0
	criu --version 2>/dev/null | sed -n 's/^Version: *\([0-9][0-9.]*\).*/\1/p' | head -n1
}

# version_ge A B: A >= B (dotted numbers)
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# criu_check: `criu check` passes (the kernel has what CRIU needs to checkpoint).
criu_check() {
	local out
	out=$(criu check 2>&1) || { echo "$out" >&2; return 1; }
}

# criu_build DIR: builds CRIU $CRIU_VERSION from the Debian 13 source package's upstream
# tarball and packages the binary as DIR/criu_<version>_<arch>.deb.
#
# Why not dpkg-buildpackage: trixie's packaging build-depends on
# python3-googleapis-common-protos, which bookworm does not have, and the deb.debian.org
# mirror this runs against serves the .orig tarball but not the .dsc / .debian.tar.xz.
# `apt-get source --tar-only` still checks the tarball's SHA256 against trixie's signed
# Sources index, so the source is the one Debian ships. The build deps (the C subset of
# trixie's Build-Depends) and the runtime libraries all come from bookworm.
criu_build() {
	local out=$1 tmp src pkg arch deps
	export DEBIAN_FRONTEND=noninteractive
	if [ ! -f "$CRIU_SOURCES" ]; then
		log "criu: adding deb-src trixie in $CRIU_SOURCES"
		cat >"$CRIU_SOURCES.tmp.$$" <<-'EOF'
			# minicri (hack/deps.sh): Debian 13 SOURCE packages only, to rebuild CRIU 4.1
			# on Debian 12. No binary package comes from here (deb-src lines only).
			deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
		EOF
		mv -f "$CRIU_SOURCES.tmp.$$" "$CRIU_SOURCES"
	fi
	apt-get update -qq || die "criu: apt-get update failed"
	apt-get install -y -qq --no-install-recommends "${CRIU_BUILD_DEPS[@]}" ||
		die "criu: installing the build deps from bookworm failed: ${CRIU_BUILD_DEPS[*]}"
	tmp=$(mktemp -d /tmp/minicri-deps-criu.XXXXXX)
	CLEANUP+=("$tmp")
	(cd "$tmp" && apt-get source -qq --only-source --tar-only "criu=$CRIU_DEB_VERSION") ||
		die "criu: apt-get source --tar-only criu=$CRIU_DEB_VERSION failed (is the trixie deb-src entry in $CRIU_SOURCES reachable?)"
	tar -C "$tmp" -xf "$tmp/criu_$CRIU_VERSION.orig.tar.xz" ||
		die "criu: cannot unpack criu_$CRIU_VERSION.orig.tar.xz"
	src="$tmp/criu-$CRIU_VERSION"
	[ -f "$src/Makefile" ] || die "criu: no source tree in $src"
	for p in "${CRIU_PATCHES[@]}"; do
		patch -s -d "$src" -p1 <"$p" || die "criu: patch $p does not apply"
	done
	log "criu: make criu in $src"
	make -C "$src" -j"$(nproc)" criu >"$tmp/build.log" 2>&1 ||
		{ tail -n 60 "$tmp/build.log" >&2; die "criu: build failed (last lines above)"; }
	"$src/criu/criu" --version | grep -q "^Version: $CRIU_VERSION\$" ||
		die "criu: the built binary does not report version $CRIU_VERSION"
	# A minimal binary package, so dpkg owns /usr/sbin/criu (it replaces bookworm's criu,
	# and `apt-get remove criu` undoes it). Depends come from dpkg-shlibdeps.
	arch=$(dpkg --print-architecture)
	pkg="$tmp/pkg"
	install -D -m 0755 "$src/criu/criu" "$pkg/usr/sbin/criu"
	strip --strip-unneeded "$pkg/usr/sbin/criu"
	mkdir -p "$tmp/shlibs/debian"
	printf 'Source: criu\n\nPackage: criu\nArchitecture: any\n' >"$tmp/shlibs/debian/control"
	deps=$(cd "$tmp/shlibs" && dpkg-shlibdeps -O "$pkg/usr/sbin/criu" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
	[ -n "$deps" ] || die "criu: dpkg-shlibdeps found no dependencies"
	mkdir -p "$pkg/DEBIAN"
	cat >"$pkg/DEBIAN/control" <<-EOF
		Package: criu
		Version: $CRIU_DEB_VERSION~$CRIU_PKG_REV
		Architecture: $arch
		Maintainer: minicri <minicri@localhost>
		Depends: $deps, iproute2, iptables
		Section: admin
		Priority: optional
		Description: checkpoint and restore in userspace (CRIU $CRIU_VERSION for minicri)
		 Upstream CRIU $CRIU_VERSION from Debian 13's criu=$CRIU_DEB_VERSION source,
		 built on Debian 12 by minicri's hack/deps.sh (kernels >= 6.13 need CRIU >= 4.1).
	EOF
	mkdir -p "$out"
	dpkg-deb --root-owner-group --build "$pkg" "$out/criu_${CRIU_DEB_VERSION}~${CRIU_PKG_REV}_$arch.deb" >/dev/null ||
		die "criu: dpkg-deb failed"
}

# criu_install DIR: installs the criu .debs from DIR (not -dev/-dbgsym/-doc); their
# dependencies come from bookworm.
criu_install() {
	local dir=$1 debs=() d
	export DEBIAN_FRONTEND=noninteractive
	for d in "$dir"/*.deb; do
		case ${d##*/} in
		*-dbgsym_* | *-dev_* | *-doc_*) ;;
		*) debs+=("$d") ;;
		esac
	done
	[ ${#debs[@]} -gt 0 ] || return 1
	log "criu: apt-get install ${debs[*]##*/}"
	apt-get install -y -qq --no-install-recommends "${debs[@]}" ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${debs[@]}"; }
}

# criu_ok: criu >= 4.2 is on PATH, or criu >= $CRIU_MIN_VERSION from our package with
# $CRIU_PATCHES (an unpatched 4.1 cannot dump sockets on Linux >= 6.16).
criu_ok() {
	local v
	v=$(criu_version)
	[ -n "$v" ] && version_ge "$v" "$CRIU_MIN_VERSION" || return 1
	version_ge "$v" 4.2 ||
		[ "$(dpkg-query -W -f='${Version}' criu 2>/dev/null)" = "$CRIU_DEB_VERSION~$CRIU_PKG_REV" ]
}

deps_criu() {
	local have want=$CRIU_VERSION-$CRIU_PKG_REV dir tmp
	if criu_ok; then
		criu_check || die "criu $(criu_version) is installed but \`criu check\` fails on this kernel"
		return 0
	fi
	have=$(criu_version)
	need_root "installing criu $CRIU_DEB_VERSION"
	dir="$CACHE_DIR/criu-$want"
	if stamp_is "$dir/.complete" "criu-$want" && ls "$dir"/criu_*.deb >/dev/null 2>&1 &&
		{ log "criu ${have:-none} is not ours ($CRIU_DEB_VERSION~$CRIU_PKG_REV) nor >= 4.2: installing it from $dir"; criu_install "$dir"; } &&
		criu_ok; then
		:
	else
		local t0=$SECONDS
		log "criu ${have:-none} is not ours ($CRIU_DEB_VERSION~$CRIU_PKG_REV) nor >= 4.2: building CRIU $CRIU_VERSION from Debian 13's criu=$CRIU_DEB_VERSION source"
		tmp=$(mktemp -d /tmp/minicri-deps-criu-debs.XXXXXX)
		CLEANUP+=("$tmp")
		criu_build "$tmp"
		criu_install "$tmp" || die "criu: installing the built packages failed"
		# shellcheck disable=SC2046
		cache_put "criu-$want" "$tmp" $(cd "$tmp" && ls -- *.deb)
		log "criu: built and installed in $((SECONDS - t0))s"
	fi
	criu_ok || die "criu: installed, but \`criu --version\` says '$(criu_version)'"
	criu_check || die "criu $(criu_version): \`criu check\` fails on this kernel"
	log "criu $(criu_version) installed (criu check ok)"
}

case ${1:-} in
check)
	[ $# = 2 ] || die "usage: hack/deps.sh check PHASE"
	check "$2"
	exit 0
	;;
install)
	# a phase outside make test: its own Debian packages, then the check
	[ $# = 2 ] || die "usage: hack/deps.sh install PHASE"
	mapfile -t pkgs < <(apt_packages "$2")
	apt_install "${pkgs[@]}"
	check "$2"
	exit 0
	;;
esac
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(apt cni cri-tools golangci-lint criu)
for s in "${steps[@]}"; do
	case $s in
	apt) deps_apt ;;
	cni) deps_cni ;;
	cri-tools) deps_cri_tools ;;
	golangci-lint) deps_golangci_lint ;;
	criu) deps_criu ;;
	*) die "unknown step $s (apt, cni, cri-tools, golangci-lint, criu; or check PHASE, install PHASE)" ;;
	esac
done
