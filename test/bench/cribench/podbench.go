package main

import (
	"flag"
	"time"
)

// podBench is what the pod benchmarks (pods, scale) share: the runtime
// under test, the result file, the images pulled first (untimed) and the
// memory measurement.
type podBench struct {
	endpoint, runtime, out     *string
	image, pause, cgroupParent *string
	memPID                     *int
	memMatch                   *string
	timeout                    *time.Duration
}

// podBenchFlags defines the shared flags on fs; timeout is the default
// timeout of each RPC.
func podBenchFlags(fs *flag.FlagSet, timeout time.Duration) podBench {
	return podBench{
		endpoint:     fs.String("endpoint", "", "CRI endpoint (unix:///...)"),
		runtime:      fs.String("runtime", "", "name of the runtime in the report"),
		out:          fs.String("out", "", "JSON result file"),
		image:        fs.String("image", "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "container image (runs sleep 3600)"),
		pause:        fs.String("pause-image", "", "pull this image first too (the runtime's sandbox image), untimed"),
		cgroupParent: fs.String("cgroup-parent", "", "cgroup parent of the pods"),
		memPID:       fs.Int("mem-pid", 0, "PID of the runtime daemon (0: no memory measurement)"),
		memMatch:     fs.String("mem-match", "", "command-line substring of the runtime's per-pod helper processes"),
		timeout:      fs.Duration("timeout", timeout, "timeout of each RPC"),
	}
}

// connect dials the runtime and returns the client and the runtime's version.
func (b podBench) connect() (*client, string, error) {
	c, err := dial(*b.endpoint, *b.timeout)
	if err != nil {
		return nil, "", err
	}
	v, err := c.version()
	if err != nil {
		c.close()
		return nil, "", err
	}
	return c, v, nil
}

// pullImages pulls -pause-image and -image (those set), untimed; pulled,
// if not nil, is told each pull's time.
func (b podBench) pullImages(c *client, pulled func(ref string, d time.Duration)) error {
	for _, ref := range []string{*b.pause, *b.image} {
		if ref == "" {
			continue
		}
		d, err := c.pull(ref)
		if err != nil {
			return err
		}
		if pulled != nil {
			pulled(ref, d)
		}
	}
	return nil
}

// memory returns the memory measurement (nil, nil without -mem-pid),
// taken settle after the last RPC to let the runtime's helpers settle.
func (b podBench) memory(settle time.Duration) func() (*memSample, error) {
	return func() (*memSample, error) {
		if *b.memPID == 0 {
			return nil, nil
		}
		time.Sleep(settle)
		return measureMemory(*b.memPID, *b.memMatch)
	}
}
