// Command junit summarises a critest (Ginkgo) JUnit report and gates it on a must-pass list.
//
//	junit -report junit.xml [-must-pass FILE] [-expected-failures FILE] [-partial]
//
// It prints "N passed, M failed, K skipped", the failed specs, the must-pass specs that did
// not pass, the specs that passed but are not yet listed in must-pass, and the expected
// failures with their reasons. It exits 1 if a must-pass spec did not pass (2 on bad input).
//
// Spec names are JUnit testcase names exactly as Ginkgo writes them, e.g.
// "[It] [sig-node] Runtime info runtime should support returning runtime info [Conformance]".
// List files hold one name per line; '#' starts a comment when it follows whitespace or
// begins the line (spec names contain no " #"). In expected-failures the comment is the reason.
//
// With -partial (a focused run) must-pass specs that were skipped or absent are reported as
// not run instead of failing the gate.
package main

import (
	"bufio"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type testsuites struct {
	Suites []testsuite `xml:"testsuite"`
}

type testsuite struct {
	Name  string     `xml:"name,attr"`
	Cases []testcase `xml:"testcase"`
}

type testcase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Time    string   `xml:"time,attr"`
	Skipped *message `xml:"skipped"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
}

type message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type result int

const (
	passed result = iota
	failed
	skipped
)

// outcome maps a Ginkgo testcase to passed/failed/skipped. Ginkgo writes a status
// attribute (passed, skipped, pending, failed, panicked, interrupted, timedout, aborted);
// other JUnit producers only have child elements.
func outcome(tc testcase) result {
	switch tc.Status {
	case "passed":
		return passed
	case "skipped", "pending":
		return skipped
	case "":
	default:
		return failed
	}
	switch {
	case tc.Failure != nil || tc.Error != nil:
		return failed
	case tc.Skipped != nil:
		return skipped
	}
	return passed
}

// indent returns "\n" + the first max lines of text, each prefixed; "" for no text.
func indent(text, prefix string, max int) string {
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > max {
		lines = append(lines[:max], "...")
	}
	return "\n" + prefix + strings.Join(lines, "\n"+prefix)
}

// suiteNode reports Ginkgo's suite-level report entries ("[BeforeSuite]", "[ReportAfterSuite] ...").
func suiteNode(name string) bool {
	for _, p := range []string{"[BeforeSuite]", "[AfterSuite]", "[SynchronizedBeforeSuite]",
		"[SynchronizedAfterSuite]", "[ReportBeforeSuite]", "[ReportAfterSuite]"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// entry is one line of a list file.
type entry struct {
	name, comment string
	line          int
}

func readList(path string) ([]entry, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, comment := line, ""
		if i := strings.Index(line, " #"); i >= 0 {
			name, comment = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+2:])
		}
		if i := strings.Index(line, "\t#"); i >= 0 && i < len(name) {
			name, comment = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+2:])
		}
		out = append(out, entry{name: name, comment: comment, line: n})
	}
	return out, sc.Err()
}

func main() {
	report := flag.String("report", "", "JUnit XML report (required)")
	mustPass := flag.String("must-pass", "", "file listing specs that must pass")
	expected := flag.String("expected-failures", "", "file listing specs expected to fail, with '# reason'")
	partial := flag.Bool("partial", false, "focused run: must-pass specs that did not run are not failures")
	verbose := flag.Bool("v", false, "also list every passed and skipped spec")
	flag.Parse()
	if *report == "" {
		fmt.Fprintln(os.Stderr, "junit: -report is required")
		os.Exit(2)
	}
	code, err := run(os.Stdout, *report, *mustPass, *expected, *partial, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "junit:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(w io.Writer, reportPath, mustPassPath, expectedPath string, partial, verbose bool) (int, error) {
	data, err := os.ReadFile(reportPath)
	if err != nil {
		return 2, err
	}
	var ts testsuites
	if err := xml.Unmarshal(data, &ts); err != nil || len(ts.Suites) == 0 {
		// A bare <testsuite> root.
		var one testsuite
		if err2 := xml.Unmarshal(data, &one); err2 != nil {
			if err == nil {
				err = err2
			}
			return 2, fmt.Errorf("parse %s: %w", reportPath, err)
		}
		ts.Suites = []testsuite{one}
	}

	status := map[string]result{}
	detail := map[string]string{} // failure message of failed specs
	var order []string
	counts := map[result]int{}
	for _, s := range ts.Suites {
		for _, tc := range s.Cases {
			r := outcome(tc)
			if suiteNode(tc.Name) && r != failed {
				continue // count specs, plus suite-level setup only when it failed
			}
			counts[r]++
			if r == failed {
				for _, m := range []*message{tc.Failure, tc.Error} {
					if m != nil && detail[tc.Name] == "" {
						detail[tc.Name] = strings.TrimSpace(m.Message)
						if detail[tc.Name] == "" {
							detail[tc.Name] = strings.TrimSpace(m.Text)
						}
					}
				}
			}
			if old, dup := status[tc.Name]; dup {
				// A repeated name (flake attempts): any failure wins.
				if old == failed || r == failed {
					status[tc.Name] = failed
				}
				continue
			}
			status[tc.Name] = r
			order = append(order, tc.Name)
		}
	}
	must, err := readList(mustPassPath)
	if err != nil {
		return 2, err
	}
	exp, err := readList(expectedPath)
	if err != nil {
		return 2, err
	}

	fmt.Fprintf(w, "critest: %d passed, %d failed, %d skipped\n", counts[passed], counts[failed], counts[skipped])

	names := func(r result) []string {
		var out []string
		for _, n := range order {
			if status[n] == r {
				out = append(out, n)
			}
		}
		return out
	}
	expReason := map[string]string{}
	for _, e := range exp {
		expReason[e.name] = e.comment
	}
	inMust := map[string]bool{}
	for _, e := range must {
		inMust[e.name] = true
	}

	if f := names(failed); len(f) > 0 {
		fmt.Fprintf(w, "\nfailed (%d):\n", len(f))
		for _, n := range f {
			tag := ""
			if inMust[n] {
				tag = "   [MUST PASS]"
			} else if _, ok := expReason[n]; ok {
				tag = "   [expected]"
			}
			fmt.Fprintf(w, "  %s%s\n", n, tag)
		}
	}
	if verbose {
		for _, r := range []result{passed, skipped} {
			label := map[result]string{passed: "passed", skipped: "skipped"}[r]
			l := names(r)
			fmt.Fprintf(w, "\n%s (%d):\n", label, len(l))
			for _, n := range l {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
	}

	var notPassed, notRun []string
	for _, e := range must {
		r, ok := status[e.name]
		switch {
		case ok && r == passed:
		case partial && (!ok || r == skipped):
			notRun = append(notRun, e.name)
		case !ok:
			notPassed = append(notPassed, e.name+"   (not in the report: name changed or spec not run?)")
		case r == skipped:
			notPassed = append(notPassed, e.name+"   (skipped)")
		default:
			notPassed = append(notPassed, e.name+"   (failed)"+indent(detail[e.name], "      ", 8))
		}
	}

	var newlyPassing []string
	for _, n := range names(passed) {
		if !inMust[n] && !suiteNode(n) {
			newlyPassing = append(newlyPassing, n)
		}
	}
	if len(newlyPassing) > 0 {
		sort.Strings(newlyPassing)
		fmt.Fprintf(w, "\npassed, not yet in must-pass (%d):\n", len(newlyPassing))
		for _, n := range newlyPassing {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}

	if len(exp) > 0 {
		fmt.Fprintf(w, "\nexpected failures (%d):\n", len(exp))
		for _, e := range exp {
			st := "not in report"
			if r, ok := status[e.name]; ok {
				st = map[result]string{passed: "PASSED now, remove from expected-failures", failed: "failed", skipped: "skipped"}[r]
			}
			fmt.Fprintf(w, "  %s   # %s   [%s]\n", e.name, e.comment, st)
			if inMust[e.name] {
				fmt.Fprintf(w, "    warning: also listed in must-pass\n")
			}
		}
	}

	if len(notRun) > 0 {
		fmt.Fprintf(w, "\nmust-pass specs not run in this (focused) run (%d):\n", len(notRun))
		for _, n := range notRun {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if len(notPassed) > 0 {
		fmt.Fprintf(w, "\nFAIL: %d must-pass spec(s) did not pass:\n", len(notPassed))
		for _, n := range notPassed {
			fmt.Fprintf(w, "  %s\n", n)
		}
		return 1, nil
	}
	fmt.Fprintf(w, "\nmust-pass: all %d listed spec(s) passed\n", len(must)-len(notRun))
	return 0, nil
}
