package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuSeconds is the CPU time (user + system) charged to the cgroup v1 cpuacct
// directories dirs (each with its descendants, also removed ones: cpuacct charges
// every ancestor when it charges a task). make bench puts the runtime daemon in one
// (with its shims or monitors and every process they fork that stays there) and
// names the pods' cgroup parent as the other.
func cpuSeconds(dirs []string) (float64, error) {
	var total float64
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage"))
		if os.IsNotExist(err) {
			continue // the pods' parent exists only once a pod ran
		}
		if err != nil {
			return 0, fmt.Errorf("cpu: %w", err)
		}
		ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu: %s: %w", d, err)
		}
		total += float64(ns) / 1e9
	}
	return total, nil
}

// splitList splits a comma-separated flag value, dropping empty elements.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
