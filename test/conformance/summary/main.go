// Command summary summarises a conformance run (the JUnit report e2e.test writes).
//
//	summary -report junit_01.xml -focus REGEXP [-excluded FILE]... [-expected-failures FILE]
//
// e2e.test lists every spec of the suite in its report, those its focus left out as
// skipped; only the specs the focus selects count. Each is passed, failed, skipped by
// the suite itself (a spec that calls Skip: too few nodes, a missing feature...), or
// excluded: left out by the run's --ginkgo.skip, built from the exclusion files (a Go
// regexp matched against the spec's full text per line, then "# why"). It prints the
// counts, the failed specs with the first lines of their failure, and every exclusion
// with its reason and the specs it left out. It exits 1 if a spec failed that no
// -expected-failures pattern names (2 on bad input).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/minicri/minicri/test/junit"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	report := flag.String("report", "", "JUnit XML report (required)")
	focus := flag.String("focus", `\[Conformance\]|\[NodeConformance\]`, "the run's --ginkgo.focus")
	var excluded, expected listFlag
	flag.Var(&excluded, "excluded", "exclusion file (repeatable)")
	flag.Var(&expected, "expected-failures", "file of specs expected to fail (same format; repeatable)")
	verbose := flag.Bool("v", false, "also list every passed spec and the specs the suite skipped")
	list := flag.Bool("list", false, "only print the name of every spec the run ran, sorted (of a --ginkgo.dry-run report: the specs the binary has for a focus and skip)")
	flag.Parse()
	if *report == "" {
		fmt.Fprintln(os.Stderr, "summary: -report is required")
		os.Exit(2)
	}
	if *list {
		if err := listSpecs(os.Stdout, *report, *focus); err != nil {
			fmt.Fprintln(os.Stderr, "summary:", err)
			os.Exit(2)
		}
		return
	}
	code, err := run(os.Stdout, *report, *focus, excluded, expected, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(w io.Writer, reportPath, focus string, excludedFiles, expectedFiles []string, verbose bool) (int, error) {
	rep, err := junit.Read(reportPath)
	if err != nil {
		return 2, err
	}
	excl, err := readRules(excludedFiles)
	if err != nil {
		return 2, err
	}
	exp, err := readRules(expectedFiles)
	if err != nil {
		return 2, err
	}
	c, err := classify(rep, focus, excl)
	if err != nil {
		return 2, err
	}
	return c.print(w, excl, exp, verbose), nil
}

// listSpecs prints the name of every spec of the report that the focus selects and the
// run did not skip, sorted.
func listSpecs(w io.Writer, reportPath, focus string) error {
	rep, err := junit.Read(reportPath)
	if err != nil {
		return err
	}
	c, err := classify(rep, focus, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, l := range [][]junit.Case{c.passed, c.failed} {
		for _, tc := range l {
			names = append(names, specText(tc.Name))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintln(w, n)
	}
	return nil
}
