package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// pullResult is what `cribench pull` writes (one cold pull).
type pullResult struct {
	Runtime string  `json:"runtime"`
	Version string  `json:"version"`
	Image   string  `json:"image"`
	Ms      float64 `json:"ms"`
	Size    uint64  `json:"size"`
	// CPU is the CPU seconds charged to -cpu-cgroups during the pull (the
	// runtime's; the registry runs elsewhere).
	CPU float64 `json:"cpu_s"`
}

func runPull(args []string) error {
	fs := flag.NewFlagSet("pull", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "CRI endpoint (unix:///...)")
	runtime := fs.String("runtime", "", "name of the runtime in the report")
	out := fs.String("out", "", "JSON result file")
	image := fs.String("image", "docker.io/minicri/bench:100m", "image to pull")
	timeout := fs.Duration("timeout", 5*time.Minute, "timeout of each RPC")
	cpuCgroups := fs.String("cpu-cgroups", "", "comma-separated cgroup v1 cpuacct directories charged with the runtime's CPU")
	_ = fs.Parse(args)
	if *endpoint == "" || *runtime == "" || *out == "" {
		return fmt.Errorf("pull: -endpoint, -runtime and -out are required")
	}
	c, err := dial(*endpoint, *timeout)
	if err != nil {
		return err
	}
	defer c.close()
	res := &pullResult{Runtime: *runtime, Image: *image}
	if res.Version, err = c.version(); err != nil {
		return err
	}
	present, _, err := c.imagePresent(*image)
	if err != nil {
		return err
	}
	if present {
		return fmt.Errorf("pull: %s: %s is already in the image store; a cold pull needs an empty store", *runtime, *image)
	}
	cg := splitList(*cpuCgroups)
	cpu0, err := cpuSeconds(cg)
	if err != nil {
		return err
	}
	d, err := c.pull(*image)
	if err != nil {
		return fmt.Errorf("%s: %w", *runtime, err)
	}
	cpu1, err := cpuSeconds(cg)
	if err != nil {
		return err
	}
	res.CPU = cpu1 - cpu0
	res.Ms = ms(d)
	if present, res.Size, err = c.imagePresent(*image); err != nil {
		return err
	} else if !present {
		return fmt.Errorf("pull: %s: %s not listed after PullImage", *runtime, *image)
	}
	fmt.Printf("cribench: %s: cold pull of %s: %.0f ms, %.1f CPU s (%.1f MB)\n", *runtime, *image, res.Ms, res.CPU, float64(res.Size)/1e6)
	return writeJSON(*out, res)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
