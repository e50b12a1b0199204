package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// steps of one sequential pod lifecycle, in order; "lifecycle" is their sum.
var steps = []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer",
	"RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "lifecycle"}

// podsResult is what `cribench pods` writes.
type podsResult struct {
	Runtime     string               `json:"runtime"`
	Version     string               `json:"version"`
	N           int                  `json:"n"`
	Steps       map[string][]float64 `json:"steps_ms"`
	Parallel    int                  `json:"parallel"`
	ParWallMs   float64              `json:"parallel_wall_ms"`
	ParPodMs    []float64            `json:"parallel_pod_ms"`
	ParTeardown float64              `json:"parallel_teardown_ms"`
	Mem0        *memSample           `json:"mem_0,omitempty"`
	MemN        *memSample           `json:"mem_n,omitempty"`
	// StepMetrics: the runtime's own per-step durations during the sequential
	// lifecycles, from its metrics endpoint (-metrics; minicri only).
	StepMetrics map[string]stepStat `json:"step_metrics,omitempty"`
}

type podsOpts struct {
	image, cgroupParent, run string
	stopTimeout              int64
	hostPortBase             int // 0: no hostPort; else pod i of kind "seq" gets base+i, of "par" base+1000+i
}

func runPods(args []string) error {
	fs := flag.NewFlagSet("pods", flag.ExitOnError)
	b := podBenchFlags(fs, 2*time.Minute)
	n := fs.Int("n", 20, "sequential pod lifecycles")
	par := fs.Int("parallel", 20, "pods started in parallel")
	stopTimeout := fs.Int64("stop-timeout", 0, "StopContainer timeout in seconds (0: SIGKILL at once)")
	hostPort := fs.Bool("hostport", false, "give each pod a hostPort mapping (TCP, container port 80)")
	hostPortBase := fs.Int("hostport-base", 30080, "host port of the first sequential pod (parallel pods: +1000)")
	metrics := fs.String("metrics", "", "URL of the runtime's Prometheus endpoint: per-step breakdown of the lifecycles")
	_ = fs.Parse(args)
	runtime := b.runtime
	if *b.endpoint == "" || *runtime == "" || *b.out == "" || *n < 1 || *par < 1 {
		return fmt.Errorf("pods: -endpoint, -runtime, -out, -n >= 1 and -parallel >= 1 are required")
	}
	c, version, err := b.connect()
	if err != nil {
		return err
	}
	defer c.close()
	res := &podsResult{Runtime: *runtime, Version: version, N: *n, Parallel: *par, Steps: map[string][]float64{}}
	fmt.Printf("cribench: %s (%s): %d sequential pod lifecycles, %d parallel pods\n", *runtime, res.Version, *n, *par)

	if err := b.pullImages(c, func(ref string, d time.Duration) {
		fmt.Printf("cribench: %s: pulled %s in %.0f ms (untimed warm-up)\n", *runtime, ref, ms(d))
	}); err != nil {
		return err
	}
	mem := b.memory(time.Second)
	if res.Mem0, err = mem(); err != nil {
		return err
	}
	o := podsOpts{image: *b.image, cgroupParent: *b.cgroupParent, run: fmt.Sprint(time.Now().UnixNano()), stopTimeout: *stopTimeout}
	if *hostPort {
		o.hostPortBase = *hostPortBase
	}
	var before map[string]stepStat
	if *metrics != "" {
		if before, err = scrapeSteps(*metrics); err != nil && !strings.Contains(err.Error(), "no "+stepMetric) {
			return err
		}
	}
	for i := 0; i < *n; i++ {
		if err := c.lifecycle(o, i, res.Steps); err != nil {
			return fmt.Errorf("%s: sequential pod %d: %w", *runtime, i, err)
		}
	}
	if *metrics != "" {
		after, err := scrapeSteps(*metrics)
		if err != nil {
			return err
		}
		res.StepMetrics = diffSteps(before, after)
	}
	if err := c.parallel(o, *par, res, mem); err != nil {
		return fmt.Errorf("%s: parallel pods: %w", *runtime, err)
	}
	return writeJSON(*b.out, res)
}

func podConfig(o podsOpts, kind string, i int) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      fmt.Sprintf("bench-%s-%d", kind, i),
			Uid:       fmt.Sprintf("bench-%s-%s-%d", o.run, kind, i),
			Namespace: "bench",
		},
		Hostname: fmt.Sprintf("bench-%s-%d", kind, i),
		Labels:   map[string]string{"app": "cribench"},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{CgroupParent: o.cgroupParent},
	}
	if o.hostPortBase > 0 {
		port := o.hostPortBase + i
		if kind == "par" {
			port += 1000
		}
		cfg.PortMappings = []*runtimeapi.PortMapping{{
			Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: int32(port),
		}}
	}
	return cfg
}

func containerConfig(o podsOpts) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: o.image},
		Command:  []string{"sleep", "3600"},
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
}

// startPod runs a pod with one running container; per-step latencies go to rec
// when it is not nil. On error it returns the pod ID (if any) for cleanup.
func (c *client) startPod(o podsOpts, kind string, i int, rec func(string, time.Duration)) (pod, ctr string, err error) {
	return c.startPodCfg(o, kind, i, containerConfig(o), rec)
}

// startPodCfg is startPod with the given container config.
func (c *client) startPodCfg(o podsOpts, kind string, i int, cc *runtimeapi.ContainerConfig, rec func(string, time.Duration)) (pod, ctr string, err error) {
	if rec == nil {
		rec = func(string, time.Duration) {}
	}
	cfg := podConfig(o, kind, i)
	d, err := c.timed("RunPodSandbox", func(ctx context.Context) error {
		r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		pod = r.GetPodSandboxId()
		return err
	})
	if err != nil {
		return pod, "", err
	}
	rec("RunPodSandbox", d)
	d, err = c.timed("CreateContainer", func(ctx context.Context) error {
		r, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: pod, Config: cc, SandboxConfig: cfg})
		ctr = r.GetContainerId()
		return err
	})
	if err != nil {
		return pod, ctr, err
	}
	rec("CreateContainer", d)
	d, err = c.timed("StartContainer", func(ctx context.Context) error {
		_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr})
		return err
	})
	if err != nil {
		return pod, ctr, err
	}
	rec("StartContainer", d)
	return pod, ctr, nil
}

// stopPod stops and removes the container (if any) and the pod.
func (c *client) stopPod(o podsOpts, pod, ctr string, rec func(string, time.Duration)) error {
	if rec == nil {
		rec = func(string, time.Duration) {}
	}
	type rpc struct {
		name string
		f    func(context.Context) error
	}
	var rpcs []rpc
	if ctr != "" {
		rpcs = append(rpcs, rpc{"StopContainer", func(ctx context.Context) error {
			_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctr, Timeout: o.stopTimeout})
			return err
		}}, rpc{"RemoveContainer", func(ctx context.Context) error {
			_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr})
			return err
		}})
	}
	rpcs = append(rpcs, rpc{"StopPodSandbox", func(ctx context.Context) error {
		_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
		return err
	}}, rpc{"RemovePodSandbox", func(ctx context.Context) error {
		_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod})
		return err
	}})
	var first error
	for _, r := range rpcs {
		d, err := c.timed(r.name, r.f)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		rec(r.name, d)
	}
	return first
}

// lifecycle times one sequential pod lifecycle, step by step.
func (c *client) lifecycle(o podsOpts, i int, samples map[string][]float64) error {
	start := time.Now()
	step := map[string]float64{}
	rec := func(name string, d time.Duration) { step[name] = ms(d) }
	pod, ctr, err := c.startPod(o, "seq", i, rec)
	if pod != "" {
		if err2 := c.stopPod(o, pod, ctr, rec); err == nil {
			err = err2
		}
	}
	if err != nil {
		return err
	}
	total := time.Since(start)
	for name, v := range step {
		samples[name] = append(samples[name], v)
	}
	samples["lifecycle"] = append(samples["lifecycle"], ms(total))
	return nil
}

// parallel starts n pods at once, measures memory with them running, then
// removes them all at once.
func (c *client) parallel(o podsOpts, n int, res *podsResult, mem func() (*memSample, error)) error {
	type pod struct {
		id, ctr string
		d       time.Duration
		err     error
	}
	pods := make([]pod, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range pods {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			t := time.Now()
			p := &pods[i]
			p.id, p.ctr, p.err = c.startPod(o, "par", i, nil)
			p.d = time.Since(t)
		}(i)
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	res.ParWallMs = ms(time.Since(start))
	var startErr error
	for i, p := range pods {
		if p.err != nil && startErr == nil {
			startErr = fmt.Errorf("pod %d: %w", i, p.err)
		}
		res.ParPodMs = append(res.ParPodMs, ms(p.d))
	}
	var err error
	if startErr == nil {
		res.MemN, err = mem()
	}
	errs := make([]error, n)
	start = time.Now()
	for i := range pods {
		if pods[i].id == "" {
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = c.stopPod(o, pods[i].id, pods[i].ctr, nil)
		}(i)
	}
	wg.Wait()
	res.ParTeardown = ms(time.Since(start))
	if startErr != nil {
		return startErr
	}
	if err != nil {
		return err
	}
	for i, e := range errs {
		if e != nil {
			return fmt.Errorf("removing pod %d: %w", i, e)
		}
	}
	return nil
}
