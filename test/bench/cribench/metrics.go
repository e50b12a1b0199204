package main

import (
	"bufio"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// stepStat is one step's histogram summary scraped from minicri's metrics endpoint.
type stepStat struct {
	Count  float64 `json:"count"`
	SumSec float64 `json:"sum_seconds"`
}

// MeanMs is the mean duration of the step in milliseconds.
func (s stepStat) MeanMs() float64 {
	if s.Count == 0 {
		return 0
	}
	return s.SumSec / s.Count * 1000
}

// stepMetric is the histogram of minicri's per-step durations (telemetry).
const stepMetric = "minicri_step_duration_seconds"

// scrapeSteps reads the _sum and _count series of stepMetric at url and returns
// them by "operation/step".
func scrapeSteps(url string) (map[string]stepStat, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: GET %s: %s", url, resp.Status)
	}
	out := map[string]stepStat{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var suffix string
		switch {
		case strings.HasPrefix(line, stepMetric+"_sum{"):
			suffix = "sum"
		case strings.HasPrefix(line, stepMetric+"_count{"):
			suffix = "count"
		default:
			continue
		}
		open, closing := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if closing < open {
			continue
		}
		labels := parseLabels(line[open+1 : closing])
		v, err := strconv.ParseFloat(strings.TrimSpace(line[closing+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		k := labels["operation"] + "/" + labels["step"]
		s := out[k]
		if suffix == "sum" {
			s.SumSec = v
		} else {
			s.Count = v
		}
		out[k] = s
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("metrics: no %s series at %s", stepMetric, url)
	}
	return out, nil
}

// parseLabels parses `a="x",b="y"` (values without escaped quotes or commas, as
// minicri's operation and step names are).
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return m
}

// diffSteps is after - before, per step (steps absent before count from zero).
func diffSteps(before, after map[string]stepStat) map[string]stepStat {
	out := map[string]stepStat{}
	for k, a := range after {
		b := before[k]
		if d := (stepStat{Count: a.Count - b.Count, SumSec: a.SumSec - b.SumSec}); d.Count > 0 {
			out[k] = d
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
