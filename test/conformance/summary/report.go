package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/minicri/minicri/test/junit"
)

// rule is one line of an exclusion or expected-failures file.
type rule struct {
	re     *regexp.Regexp
	src    string
	reason string
	where  string
}

// readRules reads "REGEXP   # reason" lines; '#' at the start of a line is a comment.
func readRules(paths []string) ([]rule, error) {
	var out []rule
	for _, p := range paths {
		lines, err := junit.ReadList(p)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			re, err := regexp.Compile(l.Text)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", p, l.N, err)
			}
			out = append(out, rule{re: re, src: l.Text, reason: l.Comment, where: fmt.Sprintf("%s:%d", p, l.N)})
		}
	}
	return out, nil
}

func match(rules []rule, name string) int {
	for i, r := range rules {
		if r.re.MatchString(name) {
			return i
		}
	}
	return -1
}

// counts is a classified run.
type counts struct {
	passed, failed, suiteSkipped []junit.Case
	excluded                     map[int][]string // rule index -> spec names
	nExcluded                    int
	seconds                      float64
}

// specText is a testcase's spec text: the name without Ginkgo's "[It] " prefix.
func specText(name string) string {
	return strings.TrimPrefix(name, "[It] ")
}

func classify(rep junit.Suites, focus string, excl []rule) (*counts, error) {
	fre, err := regexp.Compile(focus)
	if err != nil {
		return nil, fmt.Errorf("focus: %w", err)
	}
	c := &counts{excluded: map[int][]string{}}
	for _, s := range rep.Suites {
		for _, tc := range s.Cases {
			name := specText(tc.Name)
			if !strings.HasPrefix(tc.Name, "[It] ") || !fre.MatchString(name) {
				continue // suite nodes, and specs the focus leaves out
			}
			t, _ := strconv.ParseFloat(tc.Time, 64)
			c.seconds += t
			switch tc.Result() {
			case junit.Passed:
				c.passed = append(c.passed, tc)
			case junit.Skipped:
				// The run's --ginkgo.skip is built from excl: a match was never run.
				if i := match(excl, name); i >= 0 {
					c.excluded[i] = append(c.excluded[i], name)
					c.nExcluded++
				} else {
					c.suiteSkipped = append(c.suiteSkipped, tc)
				}
			default:
				c.failed = append(c.failed, tc)
			}
		}
	}
	return c, nil
}

func firstLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return "      " + strings.Join(lines, "\n      ")
}

func (c *counts) print(w io.Writer, excl, exp []rule, verbose bool) int {
	ran := len(c.passed) + len(c.failed)
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped by the suite, %d excluded (of %d specs in focus)\n",
		len(c.passed), len(c.failed), len(c.suiteSkipped), c.nExcluded, ran+len(c.suiteSkipped)+c.nExcluded)
	if ran > 0 {
		fmt.Fprintf(w, "spec time: %.0fs in all, %.1fs per spec run\n", c.seconds, c.seconds/float64(ran))
	}
	code := 0
	if len(c.failed) > 0 {
		fmt.Fprintln(w, "\nFAILED:")
		for _, tc := range c.failed {
			name := specText(tc.Name)
			tag := ""
			if i := match(exp, name); i >= 0 {
				tag = "  (expected: " + exp[i].reason + ")"
			} else {
				code = 1
			}
			fmt.Fprintf(w, "  %s%s\n", name, tag)
			for _, m := range []*junit.Message{tc.Failure, tc.Error} {
				if m != nil {
					fmt.Fprintln(w, firstLines(m.Message+"\n"+m.Text, 6))
				}
			}
		}
	}
	if c.nExcluded > 0 {
		fmt.Fprintln(w, "\nEXCLUDED (test/conformance/excluded*):")
		idx := make([]int, 0, len(c.excluded))
		for i := range c.excluded {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			fmt.Fprintf(w, "  %s  (%d specs)\n    why: %s\n", excl[i].src, len(c.excluded[i]), excl[i].reason)
			for _, n := range c.excluded[i] {
				fmt.Fprintf(w, "    - %s\n", n)
			}
		}
	}
	if verbose {
		fmt.Fprintln(w, "\nSKIPPED BY THE SUITE:")
		for _, tc := range c.suiteSkipped {
			msg := ""
			if tc.Skipped != nil {
				msg = " — " + strings.TrimSpace(tc.Skipped.Message)
			}
			fmt.Fprintf(w, "  %s%s\n", specText(tc.Name), msg)
		}
		fmt.Fprintln(w, "\nPASSED:")
		for _, tc := range c.passed {
			fmt.Fprintf(w, "  %s (%ss)\n", specText(tc.Name), tc.Time)
		}
	}
	return code
}
