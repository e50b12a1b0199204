// Command compare sets two conformance runs side by side (the JUnit reports
// of the same suite on two runtimes):
//
//	compare NAME=junit.xml OTHER=junit.xml
//
// It prints, over the specs either run ran (passed or failed; skipped ones
// are out of focus, excluded, or skipped by the suite): the counts of each,
// how many ran on both and passed on both, and by name every spec that
// passed on one and failed on the other, or ran on one only. It exits 1 if
// a spec passed on OTHER and failed on NAME (a bug of NAME's runtime: the
// harness and the spec are the same), 2 on bad input.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/minicri/minicri/test/junit"
)

// run is one report: spec name -> outcome, for the specs it ran.
type run struct {
	name    string
	results map[string]junit.Result
}

func load(arg string) (run, error) {
	name, path, ok := strings.Cut(arg, "=")
	if !ok || name == "" || path == "" {
		return run{}, fmt.Errorf("want NAME=REPORT, got %q", arg)
	}
	rep, err := junit.Read(path)
	if err != nil {
		return run{}, err
	}
	r := run{name: name, results: map[string]junit.Result{}}
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			if res := c.Result(); res != junit.Skipped && strings.HasPrefix(c.Name, "[It]") {
				if prev, seen := r.results[c.Name]; !seen || prev == junit.Passed {
					r.results[c.Name] = res // a repeated name counts failed if any run failed
				}
			}
		}
	}
	return r, nil
}

func (r run) count(want junit.Result) int {
	n := 0
	for _, res := range r.results {
		if res == want {
			n++
		}
	}
	return n
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compare NAME=junit.xml OTHER=junit.xml")
		os.Exit(2)
	}
	a, err := load(os.Args[1])
	if err == nil {
		var b run
		b, err = load(os.Args[2])
		if err == nil {
			os.Exit(compare(os.Stdout, a, b))
		}
	}
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(2)
}

func compare(w io.Writer, a, b run) int {
	var both, bothPass int
	var aOnly, bOnly, aBug, bBug []string
	for spec, ra := range a.results {
		rb, ok := b.results[spec]
		switch {
		case !ok:
			aOnly = append(aOnly, spec)
		case ra == junit.Passed && rb == junit.Passed:
			both++
			bothPass++
		case ra == junit.Failed && rb == junit.Passed:
			both++
			aBug = append(aBug, spec)
		case ra == junit.Passed && rb == junit.Failed:
			both++
			bBug = append(bBug, spec)
		default:
			both++
		}
	}
	for spec := range b.results {
		if _, ok := a.results[spec]; !ok {
			bOnly = append(bOnly, spec)
		}
	}
	for _, r := range []run{a, b} {
		fmt.Fprintf(w, "%-12s ran %d: passed %d, failed %d\n", r.name, len(r.results), r.count(junit.Passed), r.count(junit.Failed))
	}
	fmt.Fprintf(w, "ran on both: %d, passed on both: %d, failed on both: %d\n", both, bothPass, both-bothPass-len(aBug)-len(bBug))
	list(w, fmt.Sprintf("passed on %s, failed on %s", b.name, a.name), aBug)
	list(w, fmt.Sprintf("passed on %s, failed on %s", a.name, b.name), bBug)
	list(w, "ran on "+a.name+" only", aOnly)
	list(w, "ran on "+b.name+" only", bOnly)
	if len(aBug) > 0 {
		return 1
	}
	return 0
}

func list(w io.Writer, title string, specs []string) {
	fmt.Fprintf(w, "%s: %d\n", title, len(specs))
	sort.Strings(specs)
	for _, s := range specs {
		fmt.Fprintf(w, "    %s\n", s)
	}
}
