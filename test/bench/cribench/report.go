package main

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// The report compares runtime A (minicri) with runtime B (containerd);
// ratios are A/B: below 1 means A is faster or smaller.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	dir := fs.String("dir", "", "directory with the JSON results")
	a := fs.String("a", "minicri", "runtime A")
	b := fs.String("b", "containerd", "runtime B")
	_ = fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("report: -dir is required")
	}
	var pa, pb podsResult
	if err := readJSON(filepath.Join(*dir, "pods-"+*a+".json"), &pa); err != nil {
		return err
	}
	if err := readJSON(filepath.Join(*dir, "pods-"+*b+".json"), &pb); err != nil {
		return err
	}
	ua, va, err := readPulls(*dir, *a)
	if err != nil {
		return err
	}
	ub, vb, err := readPulls(*dir, *b)
	if err != nil {
		return err
	}
	w := &strings.Builder{}
	fmt.Fprintf(w, "\n==== make bench: %s (%s) vs %s (%s); ratio = %s/%s ====\n", *a, pa.Version, *b, pb.Version, *a, *b)
	lifecycleTable(w, &pa, &pb)
	parallelTable(w, &pa, &pb)
	memoryTable(w, &pa, &pb)
	pullTable(w, *a, *b, ua, ub, va, vb)
	fmt.Print(w.String())
	return nil
}

func ratio(x, y float64) string {
	if y == 0 || math.IsNaN(x) || math.IsNaN(y) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x/y)
}

func lifecycleTable(w *strings.Builder, a, b *podsResult) {
	fmt.Fprintf(w, "\n1a. %d sequential pod lifecycles (1 container: busybox sleep 3600), ms\n", a.N)
	fmt.Fprintf(w, "%-18s | %-17s | %-17s | %-13s\n", "", a.Runtime, b.Runtime, "ratio")
	fmt.Fprintf(w, "%-18s | %8s %8s | %8s %8s | %6s %6s\n", "step", "median", "p90", "median", "p90", "median", "p90")
	for _, s := range steps {
		x, y := a.Steps[s], b.Steps[s]
		fmt.Fprintf(w, "%-18s | %8.1f %8.1f | %8.1f %8.1f | %6s %6s\n", s,
			median(x), percentile(x, 90), median(y), percentile(y, 90),
			ratio(median(x), median(y)), ratio(percentile(x, 90), percentile(y, 90)))
	}
}

func parallelTable(w *strings.Builder, a, b *podsResult) {
	fmt.Fprintf(w, "\n1b. %d pods started in parallel (RunPodSandbox + CreateContainer + StartContainer each), ms\n", a.Parallel)
	fmt.Fprintf(w, "%-30s | %10s | %10s | %6s\n", "", a.Runtime, b.Runtime, "ratio")
	row := func(name string, x, y float64) {
		fmt.Fprintf(w, "%-30s | %10.1f | %10.1f | %6s\n", name, x, y, ratio(x, y))
	}
	row("wall time, all started", a.ParWallMs, b.ParWallMs)
	row("per-pod start, median", median(a.ParPodMs), median(b.ParPodMs))
	row("per-pod start, p90", percentile(a.ParPodMs, 90), percentile(b.ParPodMs, 90))
	row("wall time, all removed", a.ParTeardown, b.ParTeardown)
}

func memoryTable(w *strings.Builder, a, b *podsResult) {
	fmt.Fprintf(w, "\n1c. memory, PSS from /proc/PID/smaps_rollup, KiB (runtime processes; the sleep workload listed, not counted)\n")
	if a.Mem0 == nil || a.MemN == nil || b.Mem0 == nil || b.MemN == nil {
		fmt.Fprintf(w, "(not measured)\n")
		return
	}
	fmt.Fprintf(w, "%-30s | %16s | %16s | %6s\n", "", a.Runtime, b.Runtime, "ratio")
	cell := func(u *roleUsage) string { return fmt.Sprintf("%d (%d procs)", u.PssKiB, u.Procs) }
	for _, sample := range []struct {
		name   string
		ma, mb *memSample
	}{{"0 pods", a.Mem0, b.Mem0}, {fmt.Sprintf("%d pods running", a.Parallel), a.MemN, b.MemN}} {
		fmt.Fprintf(w, "%-30s | %16d | %16d | %6s\n", sample.name+": total", sample.ma.TotalKiB, sample.mb.TotalKiB,
			ratio(float64(sample.ma.TotalKiB), float64(sample.mb.TotalKiB)))
		for _, r := range roles {
			ua, ub := sample.ma.Roles[r], sample.mb.Roles[r]
			if ua.Procs == 0 && ub.Procs == 0 {
				continue
			}
			fmt.Fprintf(w, "%-30s | %16s | %16s |\n", "    "+r, cell(ua), cell(ub))
		}
	}
	pa := float64(a.MemN.TotalKiB-a.Mem0.TotalKiB) / float64(a.Parallel)
	pb := float64(b.MemN.TotalKiB-b.Mem0.TotalKiB) / float64(b.Parallel)
	fmt.Fprintf(w, "%-30s | %16.0f | %16.0f | %6s\n", "per pod (delta / pods)", pa, pb, ratio(pa, pb))
	fmt.Fprintf(w, "(PSS splits shared pages: the daemon's share falls when per-pod helpers map the same binary;\n"+
		" compare totals. helpers: %s monitors, %s shims.)\n", a.Runtime, b.Runtime)
}

func readPulls(dir, runtime string) ([]float64, string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "pull-"+runtime+"-*.json"))
	if err != nil {
		return nil, "", fmt.Errorf("pull results: %w", err)
	}
	sort.Strings(files)
	var out []float64
	img := ""
	for _, f := range files {
		var r pullResult
		if err := readJSON(f, &r); err != nil {
			return nil, "", err
		}
		out = append(out, r.Ms)
		img = fmt.Sprintf("%s, %.1f MB as reported by ImageStatus", r.Image, float64(r.Size)/1e6)
	}
	return out, img, nil
}

func pullTable(w *strings.Builder, na, nb string, a, b []float64, ia, ib string) {
	fmt.Fprintf(w, "\n2. cold image pull + unpack (PullImage, empty store, fresh instance each time), ms\n")
	fmt.Fprintf(w, "   %s: %s\n   %s: %s\n", na, ia, nb, ib)
	f := func(s []float64) string {
		p := make([]string, len(s))
		for i, v := range s {
			p[i] = fmt.Sprintf("%.0f", v)
		}
		return strings.Join(p, " ")
	}
	fmt.Fprintf(w, "%-30s | %10s | %10s | %6s\n", "", na, nb, "ratio")
	fmt.Fprintf(w, "%-30s | %10.0f | %10.0f | %6s\n", fmt.Sprintf("median of %d/%d", len(a), len(b)), median(a), median(b), ratio(median(a), median(b)))
	fmt.Fprintf(w, "%-30s | %10s | %10s |\n", "samples", f(a), f(b))
}
