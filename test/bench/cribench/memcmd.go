package main

import (
	"flag"
	"fmt"
	"strings"
)

// runMem prints the PSS of a running runtime by role (measureMemory): the daemon,
// its per-pod helpers and their descendants. For scripts that drive the runtime
// through something else (hack/bench-scale.sh: a kubelet). Output, one line:
//
//	total_kib N daemon PROCS/KIB helpers PROCS/KIB pause PROCS/KIB workload PROCS/KIB other PROCS/KIB
func runMem(args []string) error {
	fs := flag.NewFlagSet("mem", flag.ExitOnError)
	pid := fs.Int("pid", 0, "PID of the runtime daemon")
	match := fs.String("match", "", "command-line substring of the runtime's per-pod helper processes")
	out := fs.String("out", "", "also write the sample as JSON to this file")
	_ = fs.Parse(args)
	if *pid <= 0 {
		return fmt.Errorf("mem: -pid is required")
	}
	s, err := measureMemory(*pid, *match)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "total_kib %d", s.TotalKiB)
	for _, r := range roles {
		fmt.Fprintf(&b, " %s %d/%d", r, s.Roles[r].Procs, s.Roles[r].PssKiB)
	}
	fmt.Println(b.String())
	if *out != "" {
		return writeJSON(*out, s)
	}
	return nil
}
