# test/critest/metrics.awk — metrics.txt (Prometheus text) then cri-calls.txt ("COUNT
# service/method" lines from minicri's log): one row per method with its calls in the log,
# in the histogram, the errors, the mean and the p50/p99 bucket bounds; exits 1 if a
# method the log shows has no histogram.

function label(line, name,    re, m) {
	re = name "=\"[^\"]*\""
	if (!match(line, re)) return ""
	m = substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 3)
	return m
}

# q: the upper bound of the bucket holding the q-th quantile of key's calls.
function quantile(key, q,    i, want) {
	want = q * cnt[key]
	for (i = 1; i <= nle[key]; i++)
		if (bucket[key, i] >= want) return les[key, i]
	return "+Inf"
}

function ms(bound) { return bound == "+Inf" ? bound : sprintf("%.1f", bound * 1000) }

FNR == NR {
	if ($0 !~ /^minicri_grpc_request_duration_seconds_(bucket|count|sum)\{/) next
	key = label($0, "service") "/" label($0, "method")
	v = $NF + 0
	if ($0 ~ /^minicri_grpc_request_duration_seconds_count/) {
		cnt[key] += v
		if (label($0, "code") != "OK") errs[key] += v
	} else if ($0 ~ /^minicri_grpc_request_duration_seconds_sum/) {
		sum[key] += v
	} else {
		le = label($0, "le")
		if (!((key, le) in idx)) { idx[key, le] = ++nle[key]; les[key, nle[key]] = le }
		bucket[key, idx[key, le]] += v
	}
	next
}

{
	if (!header++) printf "    %-44s %7s %7s %6s %9s %9s %9s\n", "method", "log", "metric", "errors", "mean ms", "p50 ms<=", "p99 ms<="
	key = $2
	name = key
	sub(/^runtime\.v1\./, "", name)
	if (!(key in cnt) || nle[key] == 0) {
		printf "    %-44s %7d %7s   MISSING: no histogram\n", name, $1, "-"
		missing++
		next
	}
	printf "    %-44s %7d %7d %6d %9.2f %9s %9s\n", name, $1, cnt[key], errs[key], 1000 * sum[key] / cnt[key], ms(quantile(key, 0.5)), ms(quantile(key, 0.99))
}

END {
	if (missing) { printf "critest: metrics: FAIL: %d method(s) called without a latency histogram\n", missing; exit 1 }
}
