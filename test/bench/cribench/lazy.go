package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// lazyResult is what `cribench lazy` writes: one cold start of an image's container, every
// time measured from PullImage's start (the pod sandbox runs before, as the kubelet's).
type lazyResult struct {
	Runtime string `json:"runtime"`
	Version string `json:"version"`
	Image   string `json:"image"`
	// PullMs: PullImage alone; StartMs: PullImage, CreateContainer and StartContainer.
	PullMs  float64 `json:"pull_ms"`
	StartMs float64 `json:"start_ms"`
	// FirstMs: until the container's first log line; DoneMs: until its last, once its
	// workload has read the whole image.
	FirstMs float64 `json:"first_line_ms"`
	DoneMs  float64 `json:"done_ms"`
}

// lazyOpts are the flags of `cribench lazy`.
type lazyOpts struct {
	endpoint, runtime, image, out, logDir, first, done, warm string
	podsOpts
	timeout time.Duration
}

func runLazy(args []string) error {
	fs := flag.NewFlagSet("lazy", flag.ExitOnError)
	var o lazyOpts
	fs.StringVar(&o.endpoint, "endpoint", "", "CRI endpoint (unix:///...)")
	fs.StringVar(&o.runtime, "runtime", "", "name of the run in the report (minicri-lazy, containerd2-stargz, ...)")
	fs.StringVar(&o.image, "image", "", "image whose command prints -first, reads the whole image, then prints -done")
	fs.StringVar(&o.out, "out", "", "JSON result file")
	fs.StringVar(&o.logDir, "log-dir", "", "an empty directory for the pod's logs")
	fs.StringVar(&o.first, "first", "ready", "the container's first log line")
	fs.StringVar(&o.done, "done", "done", "the container's last log line")
	fs.StringVar(&o.cgroupParent, "cgroup-parent", "", "cgroup parent of the pod")
	fs.StringVar(&o.warm, "warm", "", "an image pulled (untimed) first, so that what a runtime starts at its first pull "+
		"(minicri's lazyfs) is not timed; removed at the end")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "timeout of each RPC and of each wait for a line")
	_ = fs.Parse(args)
	if o.endpoint == "" || o.runtime == "" || o.image == "" || o.out == "" || o.logDir == "" {
		return fmt.Errorf("lazy: -endpoint, -runtime, -image, -out and -log-dir are required")
	}
	o.run = fmt.Sprint(time.Now().UnixNano())
	c, err := dial(o.endpoint, o.timeout)
	if err != nil {
		return err
	}
	defer c.close()
	res := &lazyResult{Runtime: o.runtime, Image: o.image}
	if res.Version, err = c.version(); err != nil {
		return err
	}
	if present, _, err := c.imagePresent(o.image); err != nil {
		return err
	} else if present {
		return fmt.Errorf("lazy: %s: %s is already in the image store; a cold start needs an empty store", o.runtime, o.image)
	}
	if err := c.lazyRound(o, res); err != nil {
		return fmt.Errorf("lazy: %s: %w", o.runtime, err)
	}
	fmt.Printf("cribench: %s: %s: pull %.0f ms, first line %.0f ms, done %.0f ms\n",
		o.runtime, o.image, res.PullMs, res.FirstMs, res.DoneMs)
	return writeJSON(o.out, res)
}

// lazyRound runs the pod, then times the pull and the container's lines; it removes the
// pod and the image in any case (a lazily pulled image's layers are unmounted then).
func (c *client) lazyRound(o lazyOpts, res *lazyResult) (err error) {
	if o.warm != "" {
		if _, err := c.pull(o.warm); err != nil {
			return err
		}
	}
	cfg := podConfig(o.podsOpts, "lazy", 0)
	cfg.LogDirectory = o.logDir
	var pod, ctr string
	if _, err := c.timed("RunPodSandbox", func(ctx context.Context) error {
		r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		pod = r.GetPodSandboxId()
		return err
	}); err != nil {
		return err
	}
	defer func() {
		if e := c.lazyCleanup(o, pod, ctr); err == nil {
			err = e
		}
	}()
	t0 := time.Now()
	if _, err := c.pull(o.image); err != nil {
		return err
	}
	res.PullMs = ms(time.Since(t0))
	if ctr, err = c.createStart(pod, cfg, o.image); err != nil {
		return err
	}
	res.StartMs = ms(time.Since(t0))
	logPath := filepath.Join(o.logDir, "work.log")
	if err := waitLine(logPath, o.first, o.timeout); err != nil {
		return err
	}
	res.FirstMs = ms(time.Since(t0))
	if err := waitLine(logPath, o.done, o.timeout); err != nil {
		return err
	}
	res.DoneMs = ms(time.Since(t0))
	return nil
}

// createStart creates and starts the image's own command as container "work".
func (c *client) createStart(pod string, cfg *runtimeapi.PodSandboxConfig, image string) (ctr string, err error) {
	cc := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "work"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		LogPath:  "work.log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
	if _, err := c.timed("CreateContainer", func(ctx context.Context) error {
		r, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cc, SandboxConfig: cfg})
		ctr = r.GetContainerId()
		return err
	}); err != nil {
		return ctr, err
	}
	_, err = c.timed("StartContainer", func(ctx context.Context) error {
		_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr})
		return err
	})
	return ctr, err
}

// lazyCleanup removes the container, the pod and the images.
func (c *client) lazyCleanup(o lazyOpts, pod, ctr string) error {
	err := c.stopPod(o.podsOpts, pod, ctr, nil)
	for _, ref := range []string{o.image, o.warm} {
		if ref == "" {
			continue
		}
		if _, e := c.timed("RemoveImage "+ref, func(ctx context.Context) error {
			_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			return err
		}); err == nil {
			err = e
		}
	}
	return err
}

// waitLine polls the CRI log file at path every 2 ms until a line whose content is want.
func waitLine(path, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		found, err := hasLine(path, want)
		if found {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("not logged")
			}
			return fmt.Errorf("line %q in %s after %s: %w", want, path, timeout, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hasLine: whether the CRI log file (TIMESTAMP STREAM TAG CONTENT lines) has a line whose
// content is want.
func hasLine(path, want string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if parts := strings.SplitN(sc.Text(), " ", 4); len(parts) == 4 && parts[3] == want {
			return true, nil
		}
	}
	return false, sc.Err()
}
