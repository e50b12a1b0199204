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
	"flag"
	"fmt"
	"os"
	"strings"
)

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
