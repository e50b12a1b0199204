package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"text/tabwriter"
	"time"
)

// findingKinds fail the run; each is a row of the table.
var findingKinds = []string{"leak", "lost-line", "exit-code", "deadline", "convergence", "not-running", "error", "restart", "stream"}

// report prints the final table and returns whether the run passed.
func (s *soak) report(sl, last slope) bool {
	for _, m := range s.rpc.missedDeadlines() {
		s.find.add("deadline", "%s", m)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\n== soak of %s: seed %d, %v, up to %d pods, probe every %v, fault every %v (mean)\n",
		s.inst.daemon.describe(), s.cfg.seed, time.Since(s.start).Round(time.Second), s.cfg.pods, s.cfg.probe, s.cfg.faultEvery)
	s.printFaults(w)
	fmt.Fprintf(w, "churn\t%d pods, %d exec probes, %d attach/port-forward sessions, %d pulls, %d image removals, %d logs checked (%d lines)\n",
		s.churned.Load(), s.probes.Load(), s.streams.Load(), s.pulls.Load(), s.removals.Load(), s.logsChecked.Load(), s.lines.Load())
	fmt.Fprintln(w, "rpc\tcalls\terrors\tp50\tp99\tmax\tdeadline")
	for _, r := range s.rpc.rows() {
		fmt.Fprintf(w, "  %s\t%d\t%d\t%v\t%v\t%v\t%v\n", r.name, r.n, r.errs, ms(r.p50), ms(r.p99), ms(r.max), deadlineOf(r.name))
	}
	fmt.Fprintf(w, "  (RunPodSandbox of a pod whose CNI ADD hung for ever, ended by its deadline: %d)\n", s.rpc.excusedCalls())
	printSlope(w, fmt.Sprintf("pooled within each of %d daemon processes", sl.procs), sl, s.cfg.warm)
	printSlope(w, "the last daemon process (no daemon kill in the last stretch)", last, s.cfg.warm)
	fmt.Fprintln(w, "errors a fault explains\tcount")
	for _, r := range s.rpc.toleratedRows() {
		fmt.Fprintf(w, "  %s\t%d\t%.110s\n", r.key, r.n, r.sample)
	}
	fmt.Fprintln(w, "findings\tcount")
	ok := true
	for _, k := range findingKinds {
		n := s.find.n(k)
		ok = ok && n == 0
		fmt.Fprintf(w, "  %s\t%d\n", k, n)
	}
	for _, r := range s.leakRows() {
		fmt.Fprintf(w, "    %5d  %s\n", r.n, r.key) // no cell: the table keeps its widths
	}
	fmt.Fprintf(w, "stuck pods\t%d\t(not created in time, not stopped or removed, not NOTREADY after their %s died, or unlike the client's once converged)\n",
		s.find.nStuck(), s.inst.daemon.monitor())
	_ = w.Flush()
	s.printFindings()
	return ok
}

// printFaults is the faults' rows: injected and skipped by kind, then the
// faults and checks that do not apply to the runtime, with why.
func (s *soak) printFaults(w io.Writer) {
	fmt.Fprintln(w, "faults\tcount\tskipped")
	total, skipped := 0, 0
	for _, k := range faultKinds {
		n, sk := s.flt.count(k.kind), s.flt.countSkipped(k.kind)
		total, skipped = total+n, skipped+sk
		fmt.Fprintf(w, "  %s\t%d\t%d\n", k.kind, n, sk)
	}
	fmt.Fprintf(w, "  total\t%d\t%d\n", total, skipped)
	skips := s.inst.daemon.skips()
	if len(skips) == 0 {
		return
	}
	keys := make([]string, 0, len(skips))
	for k := range skips {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "not applying to %s (skipped faults, sessions and checks):\n", s.inst.daemon.name())
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %s\n", k, skips[k])
	}
}

func (s *soak) printFindings() {
	s.find.mu.Lock()
	defer s.find.mu.Unlock()
	keys := make([]string, 0, len(s.find.byKey))
	for k := range s.find.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := s.find.byKey[k]
		fmt.Printf("-- %s (%d; first %d):\n", k, len(l), min(len(l), 10))
		for _, m := range l[:min(len(l), 10)] {
			fmt.Println("   " + m)
		}
	}
	pods := make([]string, 0, len(s.find.stuck))
	for p := range s.find.stuck {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	if len(pods) > 0 {
		fmt.Printf("-- stuck pods (%d; first %d):\n", len(pods), min(len(pods), 10))
	}
	for _, p := range pods[:min(len(pods), 10)] {
		fmt.Printf("   %s: %s\n", p, s.find.stuck[p])
	}
}

func (f *faults) count(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKind[kind]
}

func (f *faults) countSkipped(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skipped[kind]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func deadlineOf(name string) time.Duration {
	if d, ok := deadlines[name]; ok {
		return d
	}
	return defaultDeadline
}

func printSlope(w io.Writer, what string, sl slope, warm time.Duration) {
	fmt.Fprintf(w, "daemon slope\t%s: %d samples over %v, after %v of warm-up\n", what, sl.n, sl.span.Round(time.Second), warm)
	fmt.Fprintf(w, "  fds\t%+.2f/min\t(last %.0f)\n", sl.fds, sl.last.fds)
	fmt.Fprintf(w, "  goroutines\t%+.2f/min\t(last %.0f)\n", sl.goroutines, sl.last.goroutines)
	fmt.Fprintf(w, "  RSS\t%+.2f MiB/min\t(last %.1f MiB)\n", sl.rssMiB, sl.last.rss/(1<<20))
}

// leakShape turns a leak's message into its kind: ids, pids, pod names,
// the instance's dir and the cgroup hierarchy elided.
var leakShape = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`^\S+ `), ""}, // the time
	{regexp.MustCompile(`^pod \S+ \([0-9a-f]+\): `), "pod removed: "},
	{regexp.MustCompile(`^after the last pod: `), "node at the end: "},
	{regexp.MustCompile(`/sys/fs/cgroup/[a-z_,]+/`), "/sys/fs/cgroup/*/"},
	{regexp.MustCompile(`/tmp/[a-z]+-soak-[0-9]+/`), "<dir>/"},
	{regexp.MustCompile(`[0-9a-f]{12,64}`), "<id>"},
	{regexp.MustCompile(`\b[0-9]+\b`), "<n>"},
	{regexp.MustCompile(`(process <n>) .*`), "$1 ..."},
}

// leakRows counts the leak findings by kind, most first.
func (s *soak) leakRows() []countRow {
	s.find.mu.Lock()
	defer s.find.mu.Unlock()
	byKind := map[string]int{}
	for _, m := range s.find.byKey["leak"] {
		for _, r := range leakShape {
			m = r.re.ReplaceAllString(m, r.with)
		}
		byKind[m]++
	}
	var out []countRow
	for k, n := range byKind {
		out = append(out, countRow{key: k, n: n})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].n > out[b].n || (out[a].n == out[b].n && out[a].key < out[b].key) })
	return out
}
