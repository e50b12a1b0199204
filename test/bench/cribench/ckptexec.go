package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// workloadConfig is the container of `cribench ckpt`: cmd in image, or the
// restore of a checkpoint when image is an archive's absolute path (cmd
// then comes from the archive). Same name and security config either way.
func workloadConfig(o podsOpts, cmd []string, image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "work"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  cmd,
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
}

// startPodWith runs a pod of namespace "bench" with one workload container.
func (c *client) startPodWith(o podsOpts, kind string, i int, cmd []string, image string, rec func(string, time.Duration)) (string, string, error) {
	return c.startPodCfg(o, kind, i, workloadConfig(o, cmd, image), rec)
}

// execInt runs cmd in ctr and parses its output as an integer.
func (c *client) execInt(ctr string, cmd ...string) (int, error) {
	var r *runtimeapi.ExecSyncResponse
	_, err := c.timed("ExecSync", func(ctx context.Context) (err error) {
		r, err = c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: cmd, Timeout: 20})
		return err
	})
	if err != nil {
		return 0, err
	}
	out := strings.TrimSpace(string(r.Stdout))
	if r.ExitCode != 0 {
		return 0, fmt.Errorf("exec %v: exit %d: %s %s", cmd, r.ExitCode, out, r.Stderr)
	}
	v, err := strconv.Atoi(out)
	if err != nil {
		return 0, fmt.Errorf("exec %v: %q is not a number", cmd, out)
	}
	return v, nil
}

// poll calls f every 100 ms until it returns true or an error, for at most d.
func poll(d time.Duration, what string, f func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := f()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("timed out")
			}
			return fmt.Errorf("%s after %s: %w", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// count reads the counter's /count; `echo $i >/count` truncates before it
// writes, so an empty read is retried.
func (c *client) count(ctr string) (v int, err error) {
	err = poll(2*time.Second, "read /count", func() (bool, error) {
		v, err = c.execInt(ctr, "cat", "/count")
		return err == nil, err
	})
	return v, err
}

// waitCount waits until the counter's /count reaches n.
func (c *client) waitCount(ctr string, n int) error {
	return poll(20*time.Second, fmt.Sprintf("/count >= %d", n), func() (bool, error) {
		v, err := c.execInt(ctr, "cat", "/count")
		return err == nil && v >= n, err
	})
}

// countGoesOn checks a restored counter: its first /count is at least the
// value read before the checkpoint (no restart from 1) and then grows.
func (c *client) countGoesOn(ctr string, before int) error {
	first, err := c.count(ctr)
	if err != nil {
		return err
	}
	if first < before {
		return fmt.Errorf("restored counter at %d, below %d read before the checkpoint", first, before)
	}
	return c.waitCount(ctr, first+3)
}

// rssKiB is the resident memory of the workload's dd.
func (c *client) rssKiB(ctr string) (int, error) {
	return c.execInt(ctr, "sh", "-c", `awk '/^VmRSS:/ {print $2}' /proc/$(pidof dd)/status`)
}

// waitRSS waits until the workload's dd holds at least kib KiB.
func (c *client) waitRSS(ctr string, kib int) error {
	return poll(60*time.Second, fmt.Sprintf("dd RSS >= %d KiB", kib), func() (bool, error) {
		v, err := c.rssKiB(ctr)
		return err == nil && v >= kib, err
	})
}
