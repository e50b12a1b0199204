package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// lazyRows are the rows of the lazy-pull table: what each column's median is of.
var lazyRows = []struct {
	name string
	of   func(r *lazyResult) float64
}{
	{"PullImage (ms)", func(r *lazyResult) float64 { return r.PullMs }},
	{"PullImage to first log line (ms)", func(r *lazyResult) float64 { return r.FirstMs }},
	{"first line to done: reads all (ms)", func(r *lazyResult) float64 { return r.DoneMs - r.FirstMs }},
	{"PullImage to done (ms)", func(r *lazyResult) float64 { return r.DoneMs }},
}

// runLazyReport prints, per image, the medians of each run's rounds (files
// lazy-RUN-TAG-N.json of `cribench lazy`) and the ratios lazy/full (the first run
// against the second) and lazy/stargz (the first against the fourth).
func runLazyReport(args []string) error {
	fs := flag.NewFlagSet("lazyreport", flag.ExitOnError)
	dir := fs.String("dir", "", "directory of the lazy-*.json results")
	runs := fs.String("runs", "minicri-lazy,minicri,containerd2,containerd2-stargz", "runs, in column order")
	link := fs.String("link", "", "the registry link, for the title")
	_ = fs.Parse(args)
	names := splitList(*runs)
	byImage, err := readLazy(*dir, names)
	if err != nil {
		return err
	}
	images := sortedKeys(byImage)
	if len(images) == 0 {
		return fmt.Errorf("lazyreport: no lazy-*.json results in %s", *dir)
	}
	for _, img := range images {
		printLazyTable(img, *link, names, byImage[img])
	}
	return nil
}

// readLazy reads every result file: image -> run -> rounds.
func readLazy(dir string, runs []string) (map[string]map[string][]*lazyResult, error) {
	files, err := filepath.Glob(filepath.Join(dir, "lazy-*.json"))
	if err != nil {
		return nil, fmt.Errorf("lazyreport: %w", err)
	}
	sort.Strings(files)
	out := map[string]map[string][]*lazyResult{}
	for _, f := range files {
		var r lazyResult
		if err := readJSON(f, &r); err != nil {
			return nil, err
		}
		if out[r.Image] == nil {
			out[r.Image] = map[string][]*lazyResult{}
		}
		out[r.Image][r.Runtime] = append(out[r.Image][r.Runtime], &r)
	}
	return out, nil
}

// printLazyTable prints one image's table on stdout.
func printLazyTable(img, link string, runs []string, res map[string][]*lazyResult) {
	w := os.Stdout
	rounds := 0
	for _, r := range runs {
		rounds = max(rounds, len(res[r]))
	}
	fmt.Fprintf(w, "\nlazy pulls: %s, medians of %d cold round(s)%s\n", img, rounds, link)
	fmt.Fprintf(w, "%-36s", "")
	for _, r := range runs {
		fmt.Fprintf(w, " %18s", r)
	}
	fmt.Fprintf(w, " %10s %12s\n", "lazy/full", "lazy/stargz")
	for _, row := range lazyRows {
		fmt.Fprintf(w, "%-36s", row.name)
		med := make([]float64, len(runs))
		for i, r := range runs {
			var s []float64
			for _, x := range res[r] {
				s = append(s, row.of(x))
			}
			med[i] = median(s)
			fmt.Fprintf(w, " %18.0f", med[i])
		}
		fmt.Fprintf(w, " %10s %12s\n", lazyRatio(med, 0, 1), lazyRatio(med, 0, 3))
	}
	for _, r := range runs {
		if len(res[r]) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", r, strings.TrimSpace(res[r][0].Version))
		}
	}
}

// lazyRatio is med[i]/med[j], "-" when either run is missing or med[j] is under a
// millisecond (both lines seen by the same poll).
func lazyRatio(med []float64, i, j int) string {
	if i >= len(med) || j >= len(med) || med[j] < 1 {
		return "-"
	}
	return ratio(med[i], med[j])
}
