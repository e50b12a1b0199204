// Command soak is `make soak`: a private minicri instance (built-in network,
// root on a small loop-mounted ext4; SOAK_RUNTIME=containerd, `make
// soak-containerd`: a private containerd 2.4, runtime.go) and the offline
// test registry, driven
// through the CRI for SOAK_MINUTES by a steady churn of pods, exec probes,
// chatty containers and image pulls, with faults injected from SOAK_SEED
// (kill -9 of the daemon and of monitors, a full root, a registry that
// stalls mid-blob). It checks leaks, lost log lines, exit codes, deadlines
// and convergence, prints a table, and exits 1 on any finding (issue 23).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// config is the run's shape, from the environment.
type config struct {
	minutes            float64
	pods               int
	seed               int64
	probe, life        time.Duration
	faultEvery         time.Duration
	bin, runtime       string
	keep, cni          bool
	samplerEvery, warm time.Duration
}

func loadConfig() (config, error) {
	c := config{minutes: 30, pods: 110, seed: time.Now().UnixNano() % 1000000, probe: 5 * time.Second,
		life: 60 * time.Second, faultEvery: 6 * time.Second, samplerEvery: 2 * time.Second, warm: 10 * time.Second,
		keep: os.Getenv("SOAK_KEEP") != ""}
	var err error
	set := func(name string, f func(string) error) {
		if v := os.Getenv(name); v != "" && err == nil {
			if e := f(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	}
	dur := func(d *time.Duration) func(string) error {
		return func(v string) (e error) { *d, e = time.ParseDuration(v); return }
	}
	set("SOAK_MINUTES", func(v string) (e error) { c.minutes, e = strconv.ParseFloat(v, 64); return })
	set("SOAK_PODS", func(v string) (e error) { c.pods, e = strconv.Atoi(v); return })
	set("SOAK_SEED", func(v string) (e error) { c.seed, e = strconv.ParseInt(v, 10, 64); return })
	set("SOAK_PROBE", dur(&c.probe))
	set("SOAK_LIFE", dur(&c.life))
	set("SOAK_FAULT_EVERY", dur(&c.faultEvery))
	c.runtime = os.Getenv("SOAK_RUNTIME")
	if c.runtime == "" {
		c.runtime = "minicri"
	}
	switch v := os.Getenv("SOAK_NETWORK"); {
	case v == "cni" || (v == "" && c.runtime == "containerd"):
		c.cni = true
	case v == "builtin" && c.runtime == "containerd":
		err = fmt.Errorf("SOAK_NETWORK=builtin: containerd has no built-in network (cni)")
	case v != "" && v != "builtin":
		err = fmt.Errorf("SOAK_NETWORK=%q: builtin or cni", v)
	}
	c.bin = os.Getenv("MINICRI_BIN")
	if c.bin == "" {
		c.bin, _ = filepath.Abs("bin/minicri")
	}
	return c, err
}

// soak is one run: the instance, the registry, what the client believes,
// the faults, the findings and the counters of the table.
type soak struct {
	cfg   config
	start time.Time
	inst  *instance
	reg   *registry
	bel   *belief
	find  *findings
	rpc   *rpcStats
	flt   *faults
	smp   *sampler

	pullKick                                                      chan struct{}
	churned, probes, streams, pulls, removals, logsChecked, lines atomic.Int64
	interrupted                                                   atomic.Bool // a signal ended the churn early
}

func main() {
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "soak: needs root")
		os.Exit(2)
	}
	network := "builtin"
	if cfg.cni {
		network = "cni"
	}
	target := "soak"
	if cfg.runtime != "minicri" {
		target = "soak-" + cfg.runtime
	}
	fmt.Printf("soak: %s, seed %d (replay: SOAK_SEED=%d SOAK_MINUTES=%g SOAK_PODS=%d SOAK_NETWORK=%s make %s)\n",
		cfg.runtime, cfg.seed, cfg.seed, cfg.minutes, cfg.pods, network, target)
	s := &soak{cfg: cfg, bel: newBelief(), find: newFindings(), rpc: newRPCStats(), pullKick: make(chan struct{}, 1)}
	ok, err := s.run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if !ok {
		fmt.Println("soak: FAILED")
		os.Exit(1)
	}
	fmt.Println("soak: ok")
}

func (s *soak) run() (bool, error) {
	var err error
	if s.reg, err = startRegistry(); err != nil {
		return false, fmt.Errorf("registry: %w", err)
	}
	defer s.reg.srv.Close()
	daemon, err := newRuntime(s.cfg)
	if err != nil {
		return false, err
	}
	if s.inst, err = newInstance(daemon, s.reg.srv.URL, s.cfg.cni); err != nil {
		return false, fmt.Errorf("instance: %w", err)
	}
	failed := true
	defer func() { s.inst.cleanup(s.cfg.keep && failed) }()
	fmt.Printf("soak: instance in %s (log: %s)\n", s.inst.dir, s.inst.logPath())
	if err := s.inst.start(); err != nil {
		return false, err
	}
	if err := s.inst.dial(); err != nil {
		return false, err
	}
	s.start = time.Now()
	s.flt, s.smp = newFaults(s, s.cfg.seed, s.cfg.faultEvery), &sampler{s: s}
	run := time.Duration(s.cfg.minutes * float64(time.Minute))
	s.flt.quietAt = s.start.Add(run - max(run/4, min(run, time.Minute)))
	s.flt.endAt = s.start.Add(run)
	for _, ref := range append([]string{busybox}, s.inst.daemon.images()...) {
		if s.pullImage(ref); !s.bel.image(ref) {
			return false, fmt.Errorf("cannot pull %s", ref)
		}
	}
	s.churn()
	s.converge()
	s.finish()
	s.checkNodeClean()
	ok := s.report(s.smp.slopes(s.cfg.warm), s.smp.lastProcess(s.cfg.warm))
	if s.interrupted.Load() {
		fmt.Println("soak: interrupted: not a full run")
		ok = false
	}
	failed = !ok
	if !ok && s.cfg.keep {
		fmt.Printf("soak: kept %s\n", s.inst.dir)
	}
	return ok, nil
}

// churn runs the workers, the puller, the sampler and the faults for the
// run's minutes, then waits for each to reach a point where it stops.
func (s *soak) churn() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.cfg.minutes*float64(time.Minute)))
	defer cancel()
	// SIGINT or SIGTERM ends the churn early; the pods are torn down and the
	// host cleaned as after a full run (a second signal, during that, kills).
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		if ctx.Err() == context.Canceled {
			s.interrupted.Store(true)
			fmt.Println("soak: interrupted: ending the churn, then tearing down (a second signal kills)")
		}
	}()
	var wg sync.WaitGroup
	goWG := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	goWG(func() { s.smp.run(ctx, s.cfg.samplerEvery) })
	goWG(func() { s.puller(ctx) })
	goWG(func() { s.flt.run(ctx) })
	ramp := min(20*time.Second, time.Duration(s.cfg.minutes*float64(time.Minute))/10)
	for slot := 0; slot < s.cfg.pods; slot++ {
		delay := ramp * time.Duration(slot) / time.Duration(s.cfg.pods)
		goWG(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			s.worker(ctx, slot)
		})
	}
	wg.Wait()
	stop()
	fmt.Printf("soak: churn over after %v; last fault %v ago\n", time.Since(s.start).Round(time.Second), time.Since(s.flt.lastFault()).Round(time.Second))
}

// finish tears down every pod left, four at a time, and checks the images.
func (s *soak) finish() {
	pods := s.bel.all()
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() { defer wg.Done(); s.tearDown(p); <-sem }()
	}
	wg.Wait()
	for _, ref := range churnImages {
		s.expectImage(ref, s.bel.image(ref))
	}
}
