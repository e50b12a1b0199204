# shellcheck shell=bash
# test/critest/metrics.sh — sourced by test/critest/run.sh: after the suite, scrape the
# instance's Prometheus endpoint ([metrics] address, a free port logged as "metrics
# serving") and check that every CRI method minicri served (its own log: "CRI call" and
# "CRI stream" lines, as test/e2e's summary counts them) has a latency histogram.
#
#   critest_metrics_config     the TOML to append to the instance's config
#   critest_metrics_check OUT  scrape into OUT/metrics.txt, print a table, return 1 if a
#                              method has no histogram

critest_metrics_config() {
	printf '[metrics]\naddress = "127.0.0.1:0"\n'
}

critest_metrics_check() {
	local out=$1 addr calls
	addr=$(grep -o '"msg":"metrics serving","address":"[^"]*"' "$INSTANCE_LOG" | tail -n 1 | sed 's/.*"address":"//; s/"$//')
	[ -n "$addr" ] || { echo "critest: metrics: no \"metrics serving\" line in $INSTANCE_LOG" >&2; return 1; }
	curl -sf --max-time 20 "http://$addr/metrics" >"$out/metrics.txt" ||
		{ echo "critest: metrics: scrape of http://$addr/metrics failed" >&2; return 1; }
	[ -s "$out/metrics.txt" ] || { echo "critest: metrics: empty scrape" >&2; return 1; }
	calls=$out/cri-calls.txt
	grep -oE '"msg":"CRI (call|stream)[^"]*","method":"[^"]*"' "$INSTANCE_LOG" |
		sed 's/.*"method":"\///; s/"$//' | sort | uniq -c >"$calls"
	[ -s "$calls" ] || { echo "critest: metrics: no CRI call in $INSTANCE_LOG (not --log-level debug?)" >&2; return 1; }
	echo "critest: metrics endpoint http://$addr/metrics ($(wc -l <"$calls") CRI methods called; latency from minicri_grpc_request_duration_seconds):"
	awk -f "$ROOT/test/critest/metrics.awk" "$out/metrics.txt" "$calls"
}
