// Package junit reads the JUnit XML reports Ginkgo suites write (critest,
// e2e.test) and the spec-list files the gates on them read.
package junit

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

// Suites is a <testsuites> report.
type Suites struct {
	Suites []Suite `xml:"testsuite"`
}

// Suite is one <testsuite>.
type Suite struct {
	Name  string `xml:"name,attr"`
	Cases []Case `xml:"testcase"`
}

// Case is one <testcase>: a spec, or a suite-level node.
type Case struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Time    string   `xml:"time,attr"`
	Skipped *Message `xml:"skipped"`
	Failure *Message `xml:"failure"`
	Error   *Message `xml:"error"`
}

// Message is a <skipped>, <failure> or <error>.
type Message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Read reads a <testsuites> report, or a bare <testsuite> one.
func Read(path string) (Suites, error) {
	var ts Suites
	data, err := os.ReadFile(path)
	if err != nil {
		return ts, err
	}
	if err := xml.Unmarshal(data, &ts); err != nil || len(ts.Suites) == 0 {
		var one Suite
		if err2 := xml.Unmarshal(data, &one); err2 != nil {
			if err == nil {
				err = err2
			}
			return ts, fmt.Errorf("parse %s: %w", path, err)
		}
		ts.Suites = []Suite{one}
	}
	return ts, nil
}

// Result is a testcase's outcome.
type Result int

// The outcomes.
const (
	Passed Result = iota
	Failed
	Skipped
)

// Result maps the testcase to passed/failed/skipped. Ginkgo writes a status
// attribute (passed, skipped, pending, failed, panicked, interrupted,
// timedout, aborted); other JUnit producers only have child elements.
func (c Case) Result() Result {
	switch c.Status {
	case "passed":
		return Passed
	case "skipped", "pending":
		return Skipped
	case "":
	default:
		return Failed
	}
	switch {
	case c.Failure != nil || c.Error != nil:
		return Failed
	case c.Skipped != nil:
		return Skipped
	}
	return Passed
}

// Line is an entry of a list file: its text, its comment, its line number.
type Line struct {
	Text, Comment string
	N             int
}

// ReadList reads a list file ("" reads as empty): one entry a line; '#'
// starts a comment when it begins the line or follows a space or a tab.
func ReadList(path string) ([]Line, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, comment := line, ""
		if i := strings.Index(line, " #"); i >= 0 {
			text, comment = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+2:])
		}
		if i := strings.Index(line, "\t#"); i >= 0 && i < len(text) {
			text, comment = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+2:])
		}
		out = append(out, Line{Text: text, Comment: comment, N: n})
	}
	return out, sc.Err()
}
