#!/usr/bin/env bash
# hack/ccalls.sh [--self-test] DIR...: the C files of each DIR (the monitor's,
# cmd/minicri-monitor) call in one direction only, and none is over 500 lines.
#
# Each .c file is compiled alone (gcc -c); a file calls another when its
# object uses (nm: undefined) a symbol, function or variable, that the
# other's defines. The graph of those calls must have no circle (tsort). On
# success it prints the files from the top caller down. --self-test first
# checks that a circle and a long file are caught. Run by make lint.
set -euo pipefail

max_lines=500
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# calls DIR OUT: "caller callee symbol" lines, one per symbol a file uses
# from another.
calls() {
	local dir=$1 out=$2 f o
	mkdir -p "$out"
	for f in "$dir"/*.c; do
		o="$out/$(basename "$f" .c).o"
		gcc -c -w -o "$o" "$f" || { echo "ccalls: $f does not compile" >&2; return 1; }
	done
	for o in "$out"/*.o; do
		nm -P -g "$o" | awk -v f="$(basename "$o" .o).c" '{ print f, ($2 == "U" ? "uses" : "defines"), $1 }'
	done | awk '
		$2 == "defines" { def[$3] = $1; next }
		{ use[NR] = $1 " " $3 }
		END { for (i in use) { split(use[i], u, " "); if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]], u[2] } }
	' | sort -u
}

# check DIR: 0 when its files are short enough and call in one direction.
check() {
	local dir=$1 ok=0 f n
	for f in "$dir"/*.c "$dir"/*.h; do
		[ -e "$f" ] || continue
		n=$(wc -l <"$f")
		if [ "$n" -gt "$max_lines" ]; then
			echo "ccalls: $f has $n lines (at most $max_lines)" >&2
			ok=1
		fi
	done
	local out="$tmp/$(echo "$dir" | tr / _)" files=("$dir"/*.c)
	calls "$dir" "$out" >"$out.calls" || return 1
	# Each file paired with itself too, so that one calling none is listed.
	{ awk '{ print $1, $2 }' "$out.calls"; for f in "${files[@]}"; do echo "${f##*/} ${f##*/}"; done; } >"$out.edges"
	if ! tsort "$out.edges" >"$out.order" 2>"$out.loop"; then
		# tsort names the files of each circle it finds: their calls to each other.
		sed -n 's/^tsort: \([^ ]*\.c\)$/\1/p' "$out.loop" | sort -u >"$out.circle"
		echo "ccalls: $dir: files call each other in a circle: $(tr '\n' ' ' <"$out.circle")" >&2
		echo "  their calls (caller callee symbol):" >&2
		awk 'NR == FNR { in_circle[$1] = 1; next } ($1 in in_circle) && ($2 in in_circle) { print "    " $0 }' \
			"$out.circle" "$out.calls" >&2
		return 1
	fi
	[ "$ok" = 0 ] || return 1
	echo "ccalls: $dir: ${#files[@]} files, none over $max_lines lines, each calls only those after it: $(tr '\n' ' ' <"$out.order")"
}

# self_test: a circle and a long file must fail the check, a chain pass it.
self_test() {
	local d="$tmp/self"
	mkdir -p "$d/circle" "$d/long" "$d/chain"
	printf 'int b(void);\nint a(void) { return b(); }\n' >"$d/circle/a.c"
	printf 'int a(void);\nint b(void) { return a(); }\n' >"$d/circle/b.c"
	{ echo 'int x;'; for _ in $(seq 600); do echo '/* */'; done; } >"$d/long/x.c"
	printf 'int b(void);\nint a(void) { return b(); }\n' >"$d/chain/a.c"
	printf 'int b(void) { return 0; }\n' >"$d/chain/b.c"
	if check "$d/circle" >/dev/null 2>&1 || check "$d/long" >/dev/null 2>&1 || ! check "$d/chain" >/dev/null 2>&1; then
		echo "ccalls: self-test failed: a circle or a long file passed, or a chain failed" >&2
		return 1
	fi
}

if [ "${1:-}" = --self-test ]; then
	shift
	self_test
fi
[ $# -gt 0 ] || { echo "usage: hack/ccalls.sh [--self-test] DIR..." >&2; exit 2; }
for dir in "$@"; do
	check "$dir"
done
