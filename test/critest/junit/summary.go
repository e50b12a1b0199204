package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/minicri/minicri/test/junit"
)

// tally is a report's specs by name: their outcome (a repeated name, as
// flake attempts write, fails if any attempt failed), failure messages and
// report order.
type tally struct {
	status map[string]junit.Result
	detail map[string]string
	order  []string
	counts map[junit.Result]int
}

// lists are the gate's two spec lists, with lookups.
type lists struct {
	must, exp []junit.Line
	inMust    map[string]bool
	expReason map[string]string
}

func run(w io.Writer, reportPath, mustPassPath, expectedPath string, partial, verbose bool) (int, error) {
	ts, err := junit.Read(reportPath)
	if err != nil {
		return 2, err
	}
	t := count(ts)
	l, err := readLists(mustPassPath, expectedPath)
	if err != nil {
		return 2, err
	}
	fmt.Fprintf(w, "critest: %d passed, %d failed, %d skipped\n", t.counts[junit.Passed], t.counts[junit.Failed], t.counts[junit.Skipped])
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

func count(ts junit.Suites) tally {
	t := tally{status: map[string]junit.Result{}, detail: map[string]string{}, counts: map[junit.Result]int{}}
	for _, s := range ts.Suites {
		for _, tc := range s.Cases {
			r := tc.Result()
			if suiteNode(tc.Name) && r != junit.Failed {
				continue // count specs, plus suite-level setup only when it failed
			}
			t.counts[r]++
			if r == junit.Failed && t.detail[tc.Name] == "" {
				t.detail[tc.Name] = failureText(tc)
			}
			if old, dup := t.status[tc.Name]; dup {
				if old == junit.Failed || r == junit.Failed {
					t.status[tc.Name] = junit.Failed
				}
				continue
			}
			t.status[tc.Name] = r
			t.order = append(t.order, tc.Name)
		}
	}
	return t
}

func failureText(tc junit.Case) string {
	for _, m := range []*junit.Message{tc.Failure, tc.Error} {
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
func (t tally) names(r junit.Result) []string {
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
	if l.must, err = junit.ReadList(mustPassPath); err != nil {
		return l, err
	}
	if l.exp, err = junit.ReadList(expectedPath); err != nil {
		return l, err
	}
	for _, e := range l.exp {
		l.expReason[e.Text] = e.Comment
	}
	for _, e := range l.must {
		l.inMust[e.Text] = true
	}
	return l, nil
}

func printFailed(w io.Writer, t tally, l lists) {
	f := t.names(junit.Failed)
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
	for _, r := range []junit.Result{junit.Passed, junit.Skipped} {
		label := map[junit.Result]string{junit.Passed: "passed", junit.Skipped: "skipped"}[r]
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
		r, ok := t.status[e.Text]
		switch {
		case ok && r == junit.Passed:
		case partial && (!ok || r == junit.Skipped):
			notRun = append(notRun, e.Text)
		case !ok:
			notPassed = append(notPassed, e.Text+"   (not in the report: name changed or spec not run?)")
		case r == junit.Skipped:
			notPassed = append(notPassed, e.Text+"   (skipped)")
		default:
			notPassed = append(notPassed, e.Text+"   (failed)"+indent(t.detail[e.Text], "      ", 8))
		}
	}
	return notPassed, notRun
}

func printNewlyPassing(w io.Writer, t tally, l lists) {
	var newlyPassing []string
	for _, n := range t.names(junit.Passed) {
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
		if r, ok := t.status[e.Text]; ok {
			st = map[junit.Result]string{junit.Passed: "PASSED now, remove from expected-failures", junit.Failed: "failed", junit.Skipped: "skipped"}[r]
		}
		fmt.Fprintf(w, "  %s   # %s   [%s]\n", e.Text, e.Comment, st)
		if l.inMust[e.Text] {
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
