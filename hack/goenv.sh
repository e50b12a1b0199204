# shellcheck shell=bash
# hack/goenv.sh — sourced by every script that runs Go: Go on PATH (/usr/local/go on the
# project machines, appended so a Go already on PATH wins) and the toolchain go.mod names.
# A machine's own Go (1.26.8) ignores go.mod's toolchain line (its go.env says
# GOTOOLCHAIN=local); GOTOOLCHAIN=<go.mod's toolchain> makes the go command fetch that one
# from the module proxy once (~76 MB) and use it. A GOTOOLCHAIN already set is kept.
export PATH=$PATH:/usr/local/go/bin
if [ -z "${GOTOOLCHAIN:-}" ]; then
	GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$(dirname "${BASH_SOURCE[0]}")/../go.mod")
	export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
fi
