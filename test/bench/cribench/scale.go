package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// scaleResult is what `cribench scale` writes: N pods started (at most C at a time,
// as the kubelet's pod workers do), then an exec probe per pod every period.
type scaleResult struct {
	Runtime      string     `json:"runtime"`
	Version      string     `json:"version"`
	N            int        `json:"n"`
	StartWallMs  float64    `json:"start_wall_ms"`
	StartCPU     float64    `json:"start_cpu_s"`
	Mem0         *memSample `json:"mem_0,omitempty"`
	MemN         *memSample `json:"mem_n,omitempty"`
	ExecPeriodS  float64    `json:"exec_period_s"`
	ExecWindowS  float64    `json:"exec_window_s"`
	Execs        int64      `json:"execs"`
	ExecErrors   int64      `json:"exec_errors"`
	ExecCPU      float64    `json:"exec_cpu_s"`
	ExecMs       []float64  `json:"exec_ms"`
	TeardownMs   float64    `json:"teardown_ms"`
	TeardownCPU  float64    `json:"teardown_cpu_s"`
	CPUCgroups   []string   `json:"cpu_cgroups"`
	ProbeCommand []string   `json:"probe_command"`
}

// probeCmd is what the exec probes run, as a kubelet exec readiness probe would.
var probeCmd = []string{"sh", "-c", "exit 0"}

func runScale(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	b := podBenchFlags(fs, 3*time.Minute)
	n := fs.Int("n", 110, "pods")
	conc := fs.Int("concurrency", 20, "pods being started at once")
	cpuCgroups := fs.String("cpu-cgroups", "", "comma-separated cgroup v1 cpuacct directories charged with the runtime's CPU")
	period := fs.Duration("exec-period", 10*time.Second, "exec probe period per pod")
	window := fs.Duration("exec-window", 2*time.Minute, "how long the probes run (0: none)")
	_ = fs.Parse(args)
	runtime := b.runtime
	if *b.endpoint == "" || *runtime == "" || *b.out == "" || *n < 1 || *conc < 1 {
		return fmt.Errorf("scale: -endpoint, -runtime, -out, -n >= 1 and -concurrency >= 1 are required")
	}
	c, version, err := b.connect()
	if err != nil {
		return err
	}
	defer c.close()
	res := &scaleResult{Runtime: *runtime, Version: version, N: *n, ExecPeriodS: period.Seconds(), ExecWindowS: window.Seconds(),
		CPUCgroups: splitList(*cpuCgroups), ProbeCommand: probeCmd}
	if err := b.pullImages(c, nil); err != nil {
		return err
	}
	mem := b.memory(2 * time.Second)
	if res.Mem0, err = mem(); err != nil {
		return err
	}
	o := podsOpts{image: *b.image, cgroupParent: *b.cgroupParent, run: fmt.Sprint(time.Now().UnixNano())}
	pods, runErr := c.scaleRun(o, res, *conc, mem)
	if runErr == nil && *window > 0 {
		runErr = c.probeLoad(pods, res, *period, *window)
	}
	if err := c.scaleTeardown(o, pods, res); runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return fmt.Errorf("%s: scale: %w", *runtime, runErr)
	}
	fmt.Printf("cribench: %s: %d pods running after %.1f s (%.1f CPU s); %d exec probes in %.0f s: %.1f CPU s\n",
		*runtime, *n, res.StartWallMs/1000, res.StartCPU, res.Execs, res.ExecWindowS, res.ExecCPU)
	return writeJSON(*b.out, res)
}

type scalePod struct{ id, ctr string }

// scaleRun starts res.N pods, at most conc at once, and measures the wall and CPU
// time until all run, then memory with them running.
func (c *client) scaleRun(o podsOpts, res *scaleResult, conc int, mem func() (*memSample, error)) ([]scalePod, error) {
	pods := make([]scalePod, res.N)
	errs := make([]error, res.N)
	cpu0, err := cpuSeconds(res.CPUCgroups)
	if err != nil {
		return nil, err
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			pods[i].id, pods[i].ctr, errs[i] = c.startPod(o, "scale", i, nil)
		}(i)
	}
	wg.Wait()
	res.StartWallMs = ms(time.Since(start))
	cpu1, err := cpuSeconds(res.CPUCgroups)
	if err != nil {
		return pods, err
	}
	res.StartCPU = cpu1 - cpu0
	for i, e := range errs {
		if e != nil {
			return pods, fmt.Errorf("pod %d: %w", i, e)
		}
	}
	res.MemN, err = mem()
	return pods, err
}

// probeLoad runs probeCmd in every pod's container once per period, the pods'
// probes spread evenly over the period, for window; it measures the CPU used.
func (c *client) probeLoad(pods []scalePod, res *scaleResult, period, window time.Duration) error {
	cpu0, err := cpuSeconds(res.CPUCgroups)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var execs, failures atomic.Int64
	var firstErr error
	deadline := time.Now().Add(window)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func(offset time.Duration, ctr string) {
			defer wg.Done()
			for next := time.Now().Add(offset); next.Before(deadline); next = next.Add(period) {
				time.Sleep(time.Until(next))
				d, err := c.timed("ExecSync", func(ctx context.Context) error {
					r, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: probeCmd, Timeout: 5})
					if err == nil && r.GetExitCode() != 0 {
						err = fmt.Errorf("exit code %d: %s", r.GetExitCode(), r.GetStderr())
					}
					return err
				})
				execs.Add(1)
				mu.Lock()
				if err != nil {
					failures.Add(1)
					if firstErr == nil {
						firstErr = err
					}
				} else {
					res.ExecMs = append(res.ExecMs, ms(d))
				}
				mu.Unlock()
			}
		}(period*time.Duration(i)/time.Duration(len(pods)), p.ctr)
	}
	wg.Wait()
	cpu1, err := cpuSeconds(res.CPUCgroups)
	if err != nil {
		return err
	}
	res.ExecCPU = cpu1 - cpu0
	res.Execs, res.ExecErrors = execs.Load(), failures.Load()
	if firstErr != nil {
		return fmt.Errorf("%d of %d exec probes failed, first: %w", res.ExecErrors, res.Execs, firstErr)
	}
	return nil
}

// scaleTeardown removes every pod that was started, 20 at a time.
func (c *client) scaleTeardown(o podsOpts, pods []scalePod, res *scaleResult) error {
	cpu0, _ := cpuSeconds(res.CPUCgroups)
	sem := make(chan struct{}, 20)
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range pods {
		if p.id == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, p scalePod) {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = c.stopPod(o, p.id, p.ctr, nil)
		}(i, p)
	}
	wg.Wait()
	res.TeardownMs = ms(time.Since(start))
	cpu1, _ := cpuSeconds(res.CPUCgroups)
	res.TeardownCPU = cpu1 - cpu0
	for i, e := range errs {
		if e != nil {
			return fmt.Errorf("removing pod %d: %w", i, e)
		}
	}
	return nil
}
