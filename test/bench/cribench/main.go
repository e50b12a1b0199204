// Command cribench benchmarks a CRI v1 runtime over gRPC; `make bench` runs it
// against minicri and against containerd and prints the comparison.
//
//	cribench pods  -endpoint E -runtime NAME -out FILE [-n 20] [-parallel 20] [-hostport] [-mem-pid PID -mem-match STR]
//	cribench scale -endpoint E -runtime NAME -out FILE [-n 110] [-exec-period 10s -exec-window 2m] [-cpu-cgroups DIRS]
//	cribench ckpt  -endpoint E -out FILE [-endpoint-b E2] [-n 5] [-cgroup-parent P]
//	cribench pull  -endpoint E -runtime NAME -out FILE [-image REF]
//	cribench lazy  -endpoint E -runtime NAME -image REF -log-dir DIR -out FILE
//	cribench lazyreport -dir DIR -runs minicri-lazy,minicri,containerd2,containerd2-stargz
//	cribench pushpause -registry HOST:PORT -binary FILE [-ref registry.k8s.io/pause:3.9]
//	cribench mem -pid PID [-match STR] [-out FILE]
//	cribench report -dir DIR [-runtimes minicri,containerd,containerd2]
//
// pods: pulls the images (untimed), measures memory with no pods, times N
// sequential pod lifecycles step by step, then starts P pods in parallel (each
// with one container), measures memory with them running and removes them.
// scale: starts N pods (the kubelet's 110), measures time, CPU and memory, then
// runs an exec probe per pod every period and measures the CPU it costs.
// ckpt: checkpoint (CheckpointContainer) and restore (CreateContainer +
// StartContainer) times of a busybox counter and a 500 MiB process, N rounds
// each, and the downtime of N pod migrations (CheckpointPod, StopPodSandbox,
// RestorePod, StartContainer; to -endpoint-b, or within one instance).
// pull: times one PullImage of an image that must not be in the store yet.
// lazy: one cold start of an image's own command, from PullImage's start to its first
// and last log lines (make bench-lazy); lazyreport: its table, medians and ratios.
// pushpause: publishes a static pause binary as the pause image.
// mem: prints the PSS of a runtime's processes by role, once (hack/bench-scale.sh).
// report: prints the table from the JSON files the other commands wrote.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: cribench pods|scale|ckpt|pull|lazy|lazyreport|pushpause|mem|report [flags]")
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "pods":
		err = runPods(args)
	case "scale":
		err = runScale(args)
	case "ckpt":
		err = runCkpt(args)
	case "pull":
		err = runPull(args)
	case "lazy":
		err = runLazy(args)
	case "lazyreport":
		err = runLazyReport(args)
	case "pushpause":
		err = runPushPause(args)
	case "mem":
		err = runMem(args)
	case "report":
		err = runReport(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cribench: "+strings.TrimSuffix(format, "\n")+"\n", args...)
	os.Exit(1)
}
