package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ckptWorkload is a container checkpointed and restored by `cribench ckpt`.
type ckptWorkload struct {
	name  string
	cmd   []string
	ready func(c *client, ctr string) error // the workload is in its measured state
	check func(c *client, ctr string, before int) error
	probe func(c *client, ctr string) (int, error) // a value read before the checkpoint
}

// counterCmd counts every 100 ms to its log and to /count.
var counterCmd = []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo $i; echo $i >/count; sleep 0.1; done`}

// memCmd holds ~500 MiB of touched anonymous memory: dd reads 500 MiB of
// zeros into one buffer, then blocks writing it to a pipe nobody reads.
var memCmd = []string{"sh", "-c", `dd if=/dev/zero bs=500M count=1 2>/dev/null | sleep 100000`}

// ckptSamples are one workload's timings, one per round.
type ckptSamples struct {
	CheckpointMs []float64 `json:"checkpoint_ms"`
	RestoreMs    []float64 `json:"restore_ms"` // CreateContainer + StartContainer
	ArchiveMiB   []float64 `json:"archive_mib"`
}

// ckptResult is what `cribench ckpt` writes.
type ckptResult struct {
	Runtime   string                  `json:"runtime"`
	Version   string                  `json:"version"`
	Rounds    int                     `json:"rounds"`
	Workloads map[string]*ckptSamples `json:"workloads"`
	// Migrate: CheckpointPod + StopPodSandbox on A + RestorePod + StartContainer on B.
	MigrateMs    []float64 `json:"migrate_downtime_ms"`
	MigrateScope string    `json:"migrate_scope"`
}

func runCkpt(args []string) error {
	fs := flag.NewFlagSet("ckpt", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "CRI endpoint (unix:///...)")
	endpointB := fs.String("endpoint-b", "", "migration target (default: -endpoint, a migration within one instance)")
	runtime := fs.String("runtime", "minicri", "name of the runtime in the report")
	out := fs.String("out", "", "JSON result file")
	rounds := fs.Int("n", 5, "rounds per workload")
	image := fs.String("image", "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "busybox image of the workloads")
	cgroupParent := fs.String("cgroup-parent", "", "cgroup parent of the pods")
	cgroupParentB := fs.String("cgroup-parent-b", "", "cgroup parent of the pods on -endpoint-b")
	dir := fs.String("dir", "", "directory for the checkpoints (default: a temp dir, removed)")
	timeout := fs.Duration("timeout", 5*time.Minute, "timeout of each RPC")
	_ = fs.Parse(args)
	if *endpoint == "" || *out == "" || *rounds < 1 {
		return fmt.Errorf("ckpt: -endpoint, -out and -n >= 1 are required")
	}
	c, err := dial(*endpoint, *timeout)
	if err != nil {
		return err
	}
	defer c.close()
	b, scope := c, "one instance"
	if *endpointB != "" && *endpointB != *endpoint {
		if b, err = dial(*endpointB, *timeout); err != nil {
			return err
		}
		defer b.close()
		scope = "two instances"
	}
	res := &ckptResult{Runtime: *runtime, Rounds: *rounds, Workloads: map[string]*ckptSamples{}, MigrateScope: scope}
	if res.Version, err = c.version(); err != nil {
		return err
	}
	for _, cl := range []*client{c, b} {
		if _, err := cl.pull(*image); err != nil {
			return err
		}
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "cribench-ckpt-"); err != nil {
			return err
		}
		defer os.RemoveAll(*dir)
	}
	o := podsOpts{image: *image, cgroupParent: *cgroupParent, run: fmt.Sprint(time.Now().UnixNano())}
	fmt.Printf("cribench: %s (%s): checkpoint/restore, %d rounds per workload\n", *runtime, res.Version, *rounds)
	for _, w := range ckptWorkloads() {
		s, err := c.ckptWorkload(o, w, *rounds, *dir)
		if err != nil {
			return fmt.Errorf("ckpt %s: %w", w.name, err)
		}
		res.Workloads[w.name] = s
		printCkpt(w.name+" checkpoint", s.CheckpointMs)
		printCkpt(w.name+" restore", s.RestoreMs)
		fmt.Printf("cribench: %-44s median %6.1f MiB\n", w.name+" archive size", median(s.ArchiveMiB))
	}
	oB := o
	if b != c {
		oB.cgroupParent = *cgroupParentB
	}
	if res.MigrateMs, err = migrate(c, b, o, oB, *rounds, *dir); err != nil {
		return fmt.Errorf("ckpt migrate: %w", err)
	}
	printCkpt("pod migration downtime ("+scope+")", res.MigrateMs)
	return writeJSON(*out, res)
}

func printCkpt(what string, samples []float64) {
	s := make([]string, len(samples))
	for i, v := range samples {
		s[i] = fmt.Sprintf("%.0f", v)
	}
	fmt.Printf("cribench: %-44s median %6.0f ms  samples [%s]\n", what, median(samples), strings.Join(s, " "))
}

func ckptWorkloads() []ckptWorkload {
	counter := ckptWorkload{name: "busybox counter", cmd: counterCmd,
		ready: func(c *client, ctr string) error { return c.waitCount(ctr, 5) },
		probe: func(c *client, ctr string) (int, error) { return c.count(ctr) },
		check: func(c *client, ctr string, before int) error { return c.countGoesOn(ctr, before) },
	}
	mem := ckptWorkload{name: "500 MiB process", cmd: memCmd,
		ready: func(c *client, ctr string) error { return c.waitRSS(ctr, 500*1024) },
		probe: func(c *client, ctr string) (int, error) { return c.rssKiB(ctr) },
		check: func(c *client, ctr string, before int) error { return c.waitRSS(ctr, before*9/10) },
	}
	return []ckptWorkload{counter, mem}
}

// ckptWorkload starts the workload once and, each round, checkpoints it to
// a tar and restores the tar in a fresh pod of the same namespace.
func (c *client) ckptWorkload(o podsOpts, w ckptWorkload, rounds int, dir string) (*ckptSamples, error) {
	kind := "ck-" + strings.Fields(w.name)[0]
	pod, ctr, err := c.startPodWith(o, kind, 0, w.cmd, o.image, nil)
	if pod != "" {
		defer func() { _ = c.stopPod(o, pod, ctr, nil) }()
	}
	if err != nil {
		return nil, err
	}
	if err := w.ready(c, ctr); err != nil {
		return nil, err
	}
	s := &ckptSamples{}
	for r := 1; r <= rounds; r++ {
		if err := c.ckptRound(o, w, kind, r, ctr, filepath.Join(dir, fmt.Sprintf("%s-%d.tar", kind, r)), s); err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
	}
	return s, nil
}

func (c *client) ckptRound(o podsOpts, w ckptWorkload, kind string, r int, src, archive string, s *ckptSamples) error {
	before, err := w.probe(c, src)
	if err != nil {
		return err
	}
	d, err := c.timed("CheckpointContainer", func(ctx context.Context) error {
		_, err := c.rt.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: src, Location: archive})
		return err
	})
	if err != nil {
		return err
	}
	defer os.Remove(archive)
	s.CheckpointMs = append(s.CheckpointMs, ms(d))
	if fi, err := os.Stat(archive); err == nil {
		s.ArchiveMiB = append(s.ArchiveMiB, float64(fi.Size())/(1<<20))
	}
	// RunPodSandbox untimed; CreateContainer + StartContainer timed by rec.
	var restore time.Duration
	rec := func(step string, d time.Duration) {
		if step != "RunPodSandbox" {
			restore += d
		}
	}
	pod, ctr, err := c.startPodWith(o, kind, r, []string{"true"}, archive, rec)
	if pod != "" {
		defer func() { _ = c.stopPod(o, pod, ctr, nil) }()
	}
	if err != nil {
		return err
	}
	s.RestoreMs = append(s.RestoreMs, ms(restore))
	return w.check(c, ctr, before)
}

// migrate moves a counter pod n times: CheckpointPod on from, StopPodSandbox,
// RestorePod + StartContainer on to (timed together); the restored pod is
// the next round's source (it goes back and forth between two instances).
// Removing the old pod is not counted. o and oTo: the pods' options on each.
func migrate(from, to *client, o, oTo podsOpts, n int, dir string) ([]float64, error) {
	pod, ctr, err := from.startPodWith(o, "mig", 0, counterCmd, o.image, nil)
	if err != nil {
		if pod != "" {
			_ = from.stopPod(o, pod, ctr, nil)
		}
		return nil, err
	}
	if err := from.waitCount(ctr, 5); err != nil {
		_ = from.stopPod(o, pod, ctr, nil)
		return nil, err
	}
	var out []float64
	for r := 1; r <= n; r++ {
		before, err := from.count(ctr)
		if err != nil {
			_ = from.stopPod(o, pod, ctr, nil)
			return nil, err
		}
		d, npod, nctr, err := migrateOnce(from, to, oTo, r, pod, ctr, filepath.Join(dir, fmt.Sprintf("mig-%d", r)))
		_ = from.stopPod(o, pod, "", nil) // stopped already when err is nil; removes it
		if npod == "" {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		pod, ctr = npod, nctr
		if err == nil {
			err = to.countGoesOn(ctr, before)
		}
		if err != nil {
			_ = to.stopPod(o, pod, ctr, nil)
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		out = append(out, ms(d))
		from, to, o, oTo = to, from, oTo, o
	}
	return out, from.stopPod(o, pod, ctr, nil)
}

// migrateOnce returns the downtime and the new pod and container.
func migrateOnce(from, to *client, o podsOpts, r int, pod, ctr, dir string) (time.Duration, string, string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, "", "", err
	}
	defer os.RemoveAll(dir)
	cfg := podConfig(o, "mig", r)
	cc := workloadConfig(o, counterCmd, o.image)
	start := time.Now()
	_, err := from.timed("CheckpointPod", func(ctx context.Context) error {
		_, err := from.rt.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: pod, OutputPath: dir, ContainerIds: []string{ctr}})
		return err
	})
	if err == nil {
		_, err = from.timed("StopPodSandbox", func(ctx context.Context) error {
			_, err := from.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
			return err
		})
	}
	if err != nil {
		return 0, "", "", err
	}
	var resp *runtimeapi.RestorePodResponse
	_, err = to.timed("RestorePod", func(ctx context.Context) (err error) {
		resp, err = to.rt.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: cfg, ContainerConfigs: []*runtimeapi.ContainerConfig{cc}})
		return err
	})
	if err != nil {
		return 0, "", "", err
	}
	npod := resp.GetPodSandboxId()
	if len(resp.GetRestoredContainers()) != 1 {
		return 0, npod, "", fmt.Errorf("RestorePod restored %d containers, want 1", len(resp.GetRestoredContainers()))
	}
	nctr := resp.GetRestoredContainers()[0].GetContainerId()
	_, err = to.timed("StartContainer", func(ctx context.Context) error {
		_, err := to.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: nctr})
		return err
	})
	return time.Since(start), npod, nctr, err
}
