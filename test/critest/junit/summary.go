package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// tally is a report's specs by name: their outcome (a repeated name, as
// flake attempts write, fails if any attempt failed), failure messages and
// report order.
type tally struct {
	status map[string]result
	detail map[string]string
	order  []string
	counts map[result]int
}

// lists are the gate's two spec lists, with lookups.
type lists struct {
	must, exp []entry
	inMust    map[string]bool
	expReason map[string]string
}

func run(w io.Writer, reportPath, mustPassPath, expectedPath string, partial, verbose bool) (int, error) {
	ts, err := parseReport(reportPath)
	if err != nil {
		return 2, err
	}
	t := count(ts)
	l, err := readLists(mustPassPath, expectedPath)
	if err != nil {
		return 2, err
	}
	fmt.Fprintf(w, "critest: %d passed, %d failed, %d skipped\n", t.counts[passed], t.counts[failed], t.counts[skipped])
	printFailed(w, t, l)
	if verbose {
		printVerbose(w, t)
	}
	notPassed, notRun := gate(t, l, partial)
	printNewlyPassing(w, t, l)
	printExpected(w, t, l)
	printList(w, fmt.Sprintf("must-pass specs not run in this (focused) run (%d):", len(notRun)), notRun)
	if len(notPassed) > 0 {
		printList(w, fmt.Sprintf("FAIL: %d must-pass spec(s) did not pass:", len(notPassed)), notPassed)
		return 1, nil
	}
	fmt.Fprintf(w, "\nmust-pass: all %d listed spec(s) passed\n", len(l.must)-len(notRun))
	return 0, nil
}

// parseReport reads a <testsuites> report, or a bare <testsuite> one.
func parseReport(path string) (testsuites, error) {
	var ts testsuites
	data, err := os.ReadFile(path)
	if err != nil {
		return ts, err
	}
	if err := xml.Unmarshal(data, &ts); err != nil || len(ts.Suites) == 0 {
		var one testsuite
		if err2 := xml.Unmarshal(data, &one); err2 != nil {
			if err == nil {
				err = err2
			}
			return ts, fmt.Errorf("parse %s: %w", path, err)
		}
		ts.Suites = []testsuite{one}
	}
	return ts, nil
}

func count(ts testsuites) tally {
	t := tally{status: map[string]result{}, detail: map[string]string{}, counts: map[result]int{}}
	for _, s := range ts.Suites {
		for _, tc := range s.Cases {
			r := outcome(tc)
			if suiteNode(tc.Name) && r != failed {
				continue // count specs, plus suite-level setup only when it failed
			}
			t.counts[r]++
			if r == failed && t.detail[tc.Name] == "" {
				t.detail[tc.Name] = failureText(tc)
			}
			if old, dup := t.status[tc.Name]; dup {
				if old == failed || r == failed {
					t.status[tc.Name] = failed
				}
				continue
			}
			t.status[tc.Name] = r
			t.order = append(t.order, tc.Name)
		}
	}
	return t
}

func failureText(tc testcase) string {
	for _, m := range []*message{tc.Failure, tc.Error} {
		if m == nil {
			continue
		}
		if msg := strings.TrimSpace(m.Message); msg != "" {
			return msg
		}
		if text := strings.TrimSpace(m.Text); text != "" {
			return text
		}
	}
	return ""
}

// names lists the specs with outcome r, in report order.
func (t tally) names(r result) []string {
	var out []string
	for _, n := range t.order {
		if t.status[n] == r {
			out = append(out, n)
		}
	}
	return out
}

func readLists(mustPassPath, expectedPath string) (lists, error) {
	l := lists{inMust: map[string]bool{}, expReason: map[string]string{}}
	var err error
	if l.must, err = readList(mustPassPath); err != nil {
		return l, err
	}
	if l.exp, err = readList(expectedPath); err != nil {
		return l, err
	}
	for _, e := range l.exp {
		l.expReason[e.name] = e.comment
	}
	for _, e := range l.must {
		l.inMust[e.name] = true
	}
	return l, nil
}

func printFailed(w io.Writer, t tally, l lists) {
	f := t.names(failed)
	if len(f) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfailed (%d):\n", len(f))
	for _, n := range f {
		tag := ""
		if l.inMust[n] {
			tag = "   [MUST PASS]"
		} else if _, ok := l.expReason[n]; ok {
			tag = "   [expected]"
		}
		fmt.Fprintf(w, "  %s%s\n", n, tag)
	}
}

func printVerbose(w io.Writer, t tally) {
	for _, r := range []result{passed, skipped} {
		label := map[result]string{passed: "passed", skipped: "skipped"}[r]
		l := t.names(r)
		fmt.Fprintf(w, "\n%s (%d):\n", label, len(l))
		for _, n := range l {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

// gate sorts the must-pass specs that did not pass into failures and, in a
// partial (focused) run, specs that were not run.
func gate(t tally, l lists, partial bool) (notPassed, notRun []string) {
	for _, e := range l.must {
		r, ok := t.status[e.name]
		switch {
		case ok && r == passed:
		case partial && (!ok || r == skipped):
			notRun = append(notRun, e.name)
		case !ok:
			notPassed = append(notPassed, e.name+"   (not in the report: name changed or spec not run?)")
		case r == skipped:
			notPassed = append(notPassed, e.name+"   (skipped)")
		default:
			notPassed = append(notPassed, e.name+"   (failed)"+indent(t.detail[e.name], "      ", 8))
		}
	}
	return notPassed, notRun
}

func printNewlyPassing(w io.Writer, t tally, l lists) {
	var newlyPassing []string
	for _, n := range t.names(passed) {
		if !l.inMust[n] && !suiteNode(n) {
			newlyPassing = append(newlyPassing, n)
		}
	}
	sort.Strings(newlyPassing)
	printList(w, fmt.Sprintf("passed, not yet in must-pass (%d):", len(newlyPassing)), newlyPassing)
}

func printExpected(w io.Writer, t tally, l lists) {
	if len(l.exp) == 0 {
		return
	}
	fmt.Fprintf(w, "\nexpected failures (%d):\n", len(l.exp))
	for _, e := range l.exp {
		st := "not in report"
		if r, ok := t.status[e.name]; ok {
			st = map[result]string{passed: "PASSED now, remove from expected-failures", failed: "failed", skipped: "skipped"}[r]
		}
		fmt.Fprintf(w, "  %s   # %s   [%s]\n", e.name, e.comment, st)
		if l.inMust[e.name] {
			fmt.Fprintf(w, "    warning: also listed in must-pass\n")
		}
	}
}

// printList prints a headed list, nothing when it is empty.
func printList(w io.Writer, head string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", head)
	for _, n := range items {
		fmt.Fprintf(w, "  %s\n", n)
	}
}
