package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The report compares the first runtime (minicri) with each of the others
// (containerd 1.6, containerd 2.4); ratios are first/other: below 1 means the
// first is faster or smaller.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	dir := fs.String("dir", "", "directory with the JSON results")
	names := fs.String("runtimes", "minicri,containerd", "runtimes, the first compared with each other one")
	_ = fs.Parse(args)
	rts := splitList(*names)
	if *dir == "" || len(rts) < 2 {
		return fmt.Errorf("report: -dir and at least two -runtimes are required")
	}
	r := &report{w: &strings.Builder{}, names: rts}
	for _, n := range rts {
		var p podsResult
		if err := readJSON(filepath.Join(*dir, "pods-"+n+".json"), &p); err != nil {
			return err
		}
		r.pods = append(r.pods, &p)
		var s scaleResult
		if err := readJSON(filepath.Join(*dir, "scale-"+n+".json"), &s); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			r.scale = append(r.scale, nil)
		} else {
			r.scale = append(r.scale, &s)
		}
		pulls, cpus, img, err := readPulls(*dir, n)
		if err != nil {
			return err
		}
		r.pulls = append(r.pulls, pulls)
		r.pullCPU = append(r.pullCPU, cpus)
		r.images = append(r.images, img)
	}
	r.print()
	fmt.Print(r.w.String())
	return nil
}

type report struct {
	w       *strings.Builder
	names   []string
	pods    []*podsResult
	scale   []*scaleResult
	pulls   [][]float64
	pullCPU [][]float64
	images  []string
}

func ratio(x, y float64) string {
	if y == 0 || math.IsNaN(x) || math.IsNaN(y) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x/y)
}

// header prints the column heads: one per runtime, then one ratio per other runtime.
func (r *report) header(unit string) {
	fmt.Fprintf(r.w, "%-34s", unit)
	for _, p := range r.pods {
		fmt.Fprintf(r.w, " | %15s", shortName(p))
	}
	for _, p := range r.pods[1:] {
		fmt.Fprintf(r.w, " | %9s", "/"+shortName(p))
	}
	fmt.Fprintln(r.w)
}

// shortName is the runtime's name and major.minor version ("containerd 2.4").
func shortName(p *podsResult) string {
	f := strings.Fields(p.Version)
	if len(f) < 2 || p.Runtime == "minicri" {
		return p.Runtime
	}
	v := strings.TrimPrefix(f[len(f)-1], "v")
	if parts := strings.SplitN(v, ".", 3); len(parts) >= 2 {
		v = parts[0] + "." + parts[1]
	}
	return "ctrd " + v
}

// row prints one value per runtime (NaN: "-") and the first's ratio to each other.
func (r *report) row(name, format string, vals []float64) {
	fmt.Fprintf(r.w, "%-34s", name)
	for _, v := range vals {
		if math.IsNaN(v) {
			fmt.Fprintf(r.w, " | %15s", "-")
		} else {
			fmt.Fprintf(r.w, " | %15s", fmt.Sprintf(format, v))
		}
	}
	for _, v := range vals[1:] {
		fmt.Fprintf(r.w, " | %9s", ratio(vals[0], v))
	}
	fmt.Fprintln(r.w)
}

func (r *report) each(f func(p *podsResult) float64) []float64 {
	out := make([]float64, len(r.pods))
	for i, p := range r.pods {
		out[i] = f(p)
	}
	return out
}

func (r *report) print() {
	fmt.Fprintf(r.w, "\n==== make bench: ")
	for i, p := range r.pods {
		if i > 0 {
			fmt.Fprintf(r.w, " vs ")
		}
		fmt.Fprintf(r.w, "%s", p.Version)
	}
	fmt.Fprintf(r.w, "; ratio = %s/other ====\n", r.names[0])
	r.lifecycle()
	r.stepBreakdown()
	r.parallel()
	r.memory()
	r.scaleTable()
	r.pullTable()
}

func (r *report) lifecycle() {
	fmt.Fprintf(r.w, "\n1a. %d sequential pod lifecycles (1 container: busybox sleep 3600), medians\n", r.pods[0].N)
	r.header("ms")
	for _, s := range steps {
		r.row(s, "%.1f", r.each(func(p *podsResult) float64 { return median(p.Steps[s]) }))
	}
	r.row("lifecycle p90", "%.1f", r.each(func(p *podsResult) float64 { return percentile(p.Steps["lifecycle"], 90) }))
	r.row("pod start (Run+Create+Start)", "%.1f", r.each(func(p *podsResult) float64 { return median(podStart(p)) }))
}

// podStart is each sequential lifecycle's RunPodSandbox + CreateContainer + StartContainer.
func podStart(p *podsResult) []float64 {
	run, cr, st := p.Steps["RunPodSandbox"], p.Steps["CreateContainer"], p.Steps["StartContainer"]
	var out []float64
	for i := range run {
		if i < len(cr) && i < len(st) {
			out = append(out, run[i]+cr[i]+st[i])
		}
	}
	return out
}

// stepBreakdown: the first runtime's named steps, from its metrics endpoint.
func (r *report) stepBreakdown() {
	p := r.pods[0]
	if len(p.StepMetrics) == 0 {
		return
	}
	fmt.Fprintf(r.w, "\n1a'. %s per-step breakdown of the sequential lifecycles, from its metrics endpoint (%s), mean ms\n",
		p.Runtime, stepMetric)
	for _, k := range sortedKeys(p.StepMetrics) {
		s := p.StepMetrics[k]
		fmt.Fprintf(r.w, "    %-48s %8.2f  (n=%.0f)\n", k, s.MeanMs(), s.Count)
	}
}

func (r *report) parallel() {
	fmt.Fprintf(r.w, "\n1b. %d pods started in parallel (RunPodSandbox + CreateContainer + StartContainer each)\n", r.pods[0].Parallel)
	r.header("ms")
	r.row("wall time, all started", "%.1f", r.each(func(p *podsResult) float64 { return p.ParWallMs }))
	r.row("per-pod start, median", "%.1f", r.each(func(p *podsResult) float64 { return median(p.ParPodMs) }))
	r.row("per-pod start, p90", "%.1f", r.each(func(p *podsResult) float64 { return percentile(p.ParPodMs, 90) }))
	r.row("wall time, all removed", "%.1f", r.each(func(p *podsResult) float64 { return p.ParTeardown }))
}

func (r *report) memory() {
	fmt.Fprintf(r.w, "\n1c. memory, PSS from /proc/PID/smaps_rollup (runtime processes; the sleep workload not counted)\n")
	for _, p := range r.pods {
		if p.Mem0 == nil || p.MemN == nil {
			fmt.Fprintf(r.w, "(not measured)\n")
			return
		}
	}
	r.header("KiB")
	r.row("0 pods: total", "%.0f", r.each(func(p *podsResult) float64 { return float64(p.Mem0.TotalKiB) }))
	r.row(fmt.Sprintf("%d pods: total", r.pods[0].Parallel), "%.0f", r.each(func(p *podsResult) float64 { return float64(p.MemN.TotalKiB) }))
	for _, role := range roles {
		if role == "workload" {
			continue
		}
		r.row("    "+role+" (procs)", "%.0f", r.each(func(p *podsResult) float64 { return float64(p.MemN.Roles[role].Procs) }))
		r.row("    "+role+" (KiB)", "%.0f", r.each(func(p *podsResult) float64 { return float64(p.MemN.Roles[role].PssKiB) }))
	}
	r.row("per pod (delta / pods)", "%.0f", r.each(func(p *podsResult) float64 {
		return float64(p.MemN.TotalKiB-p.Mem0.TotalKiB) / float64(p.Parallel)
	}))
	fmt.Fprintf(r.w, "(helpers: minicri's monitors, containerd's shims. PSS splits shared pages: compare totals.)\n")
}

func (r *report) scaleEach(f func(s *scaleResult) float64) []float64 {
	out := make([]float64, len(r.scale))
	for i, s := range r.scale {
		out[i] = math.NaN()
		if s != nil {
			out[i] = f(s)
		}
	}
	return out
}

func (r *report) scaleTable() {
	s0 := r.scale[0]
	if s0 == nil {
		return
	}
	fmt.Fprintf(r.w, "\n3. %d pods through CRI (20 starting at a time), then an exec probe (%s) per pod every %.0f s for %.0f s\n",
		s0.N, strings.Join(s0.ProbeCommand, " "), s0.ExecPeriodS, s0.ExecWindowS)
	r.header("")
	r.row("time until all running, s", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return s.StartWallMs / 1000 }))
	r.row("CPU s to start them", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return s.StartCPU }))
	memOK := func(s *scaleResult) bool { return s.Mem0 != nil && s.MemN != nil }
	r.row(fmt.Sprintf("PSS with %d pods, MiB", s0.N), "%.1f", r.scaleEach(func(s *scaleResult) float64 {
		if !memOK(s) {
			return math.NaN()
		}
		return float64(s.MemN.TotalKiB) / 1024
	}))
	r.row("PSS per pod (delta / pods), KiB", "%.0f", r.scaleEach(func(s *scaleResult) float64 {
		if !memOK(s) {
			return math.NaN()
		}
		return float64(s.MemN.TotalKiB-s.Mem0.TotalKiB) / float64(s.N)
	}))
	r.row("exec probes run", "%.0f", r.scaleEach(func(s *scaleResult) float64 { return float64(s.Execs) }))
	r.row("ExecSync CPU s (whole window)", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return s.ExecCPU }))
	r.row("CPU ms per exec probe", "%.1f", r.scaleEach(func(s *scaleResult) float64 {
		if s.Execs == 0 {
			return math.NaN()
		}
		return s.ExecCPU * 1000 / float64(s.Execs)
	}))
	r.row("ExecSync latency median, ms", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return median(s.ExecMs) }))
	r.row("ExecSync latency p90, ms", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return percentile(s.ExecMs, 90) }))
	r.row("time to remove all, s", "%.1f", r.scaleEach(func(s *scaleResult) float64 { return s.TeardownMs / 1000 }))
	fmt.Fprintf(r.w, "(CPU: cpuacct of the daemon's cgroup (daemon, shims/monitors, runc) + the pods' cgroup parent.)\n")
}

// readPulls returns the pulls' latencies (ms) and CPU seconds.
func readPulls(dir, runtime string) (ms, cpu []float64, img string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "pull-"+runtime+"-*.json"))
	if err != nil {
		return nil, nil, "", fmt.Errorf("pull results: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		var r pullResult
		if err := readJSON(f, &r); err != nil {
			return nil, nil, "", err
		}
		ms = append(ms, r.Ms)
		cpu = append(cpu, r.CPU)
		img = fmt.Sprintf("%s, %.1f MB as reported by ImageStatus", r.Image, float64(r.Size)/1e6)
	}
	return ms, cpu, img, nil
}

func (r *report) pullTable() {
	fmt.Fprintf(r.w, "\n2. cold image pull + unpack (PullImage, empty store, fresh instance each time)\n")
	for i, n := range r.names {
		fmt.Fprintf(r.w, "   %s: %s\n", n, r.images[i])
	}
	r.header("ms")
	vals := make([]float64, len(r.pulls))
	for i, p := range r.pulls {
		vals[i] = median(p)
	}
	r.row(fmt.Sprintf("median of %d", len(r.pulls[0])), "%.0f", vals)
	for i, p := range r.pullCPU {
		vals[i] = median(p)
	}
	r.row("CPU s (runtime's cgroups), median", "%.1f", vals)
	fmt.Fprintf(r.w, "%-34s", "samples")
	for _, p := range r.pulls {
		s := make([]string, len(p))
		for i, v := range p {
			s[i] = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(r.w, " | %15s", strings.Join(s, " "))
	}
	fmt.Fprintln(r.w)
}
