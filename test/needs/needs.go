// Package needs reads hack/needs.txt, the one declared list of the external programs each
// phase of the build and tests runs and what provides them, and finds the programs the
// project's scripts and Go code actually run, so that a test can hold the two together.
//
// hack/deps.sh installs every provider of the list (`make deps`) and checks a phase's
// programs at the start of that phase (`hack/deps.sh check PHASE`).
package needs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Need is one row of hack/needs.txt: a program, what provides it, the phases that run it.
type Need struct {
	Program  string
	Provider string // a Debian package, or @step: built by that step of hack/deps.sh (@bench-tools: hack/bench-tools.sh)
	Phases   []string
	Line     int
}

// Groups are the phase names a row may use for several phases at once.
var Groups = map[string][]string{
	// every target that runs a minicri daemon
	"daemon": {"run", "integration", "critest", "e2e", "e2e-evented", "conformance-ci", "vmtest-ci",
		"bench", "bench-scale", "bench-ckpt", "bench-ab", "bench-lazy", "cluster", "conformance", "vmtest", "soak-ci", "soak"},
}

// Phases are the names a row may use: make's targets that check their needs.
var Phases = []string{"deps", "build", "vet", "lint", "unit", "fuzz", "integration", "critest", "e2e",
	"e2e-evented", "conformance-ci", "vmtest-ci", "run", "bench", "bench-scale", "bench-ckpt", "bench-ab", "bench-lazy", "cluster",
	"conformance", "vmtest", "soak-ci", "soak", "soak-containerd"}

// Parse reads a needs file.
func Parse(path string) ([]Need, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("needs: %w", err)
	}
	defer f.Close()
	var out []Need
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want PROGRAM PROVIDER PHASE..., got %q", path, n, line)
		}
		need := Need{Program: fields[0], Provider: fields[1], Line: n}
		for _, p := range fields[2:] {
			if !known(p) {
				return nil, fmt.Errorf("%s:%d: unknown phase %q", path, n, p)
			}
			need.Phases = append(need.Phases, Expand(p)...)
		}
		out = append(out, need)
	}
	return out, sc.Err()
}

// Expand resolves a group name to its phases.
func Expand(p string) []string {
	if g, ok := Groups[p]; ok {
		return g
	}
	return []string{p}
}

func known(p string) bool {
	if _, ok := Groups[p]; ok {
		return true
	}
	for _, q := range Phases {
		if q == p {
			return true
		}
	}
	return false
}

// ByProgram indexes the rows: program -> set of phases.
func ByProgram(rows []Need) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range rows {
		if out[r.Program] == nil {
			out[r.Program] = map[string]bool{}
		}
		for _, p := range r.Phases {
			out[r.Program][p] = true
		}
	}
	return out
}
