package main

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const busybox = "docker.io/library/busybox:latest"

// worker churns pods in one slot until ctx ends; the pod it has then is
// left running for the convergence check.
func (s *soak) worker(ctx context.Context, slot int) {
	rng := rand.New(rand.NewSource(s.cfg.seed + int64(slot)*7919))
	for n := 0; ctx.Err() == nil; n++ {
		p := &pod{slot: slot, name: fmt.Sprintf("soak-%d-%d", slot, n)}
		if !s.setUp(p, rng) {
			s.tearDown(p)
			continue
		}
		s.churned.Add(1)
		life := time.Duration(float64(s.cfg.life) * (0.5 + rng.Float64()))
		if !s.probeUntil(ctx, p, rng, time.Now().Add(life)) {
			return // the run ended: the pod stays
		}
		s.tearDown(p)
	}
}

func (s *soak) podConfig(p *pod) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: p.name, Namespace: "soak", Uid: "uid-" + p.name},
		Hostname: p.name, LogDirectory: p.logDir,
		Labels: map[string]string{"soak.uid": p.name},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD,
				Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}}},
	}
}

// setUp runs the pod and starts its two containers; false when a fault (or
// a finding) left it unusable.
func (s *soak) setUp(p *pod, rng *rand.Rand) bool {
	p.logDir = filepath.Join(s.inst.logs, p.name)
	cfg := s.podConfig(p)
	s.inst.daemon.adjustPod(s.inst, cfg)
	if !s.runPod(p, cfg) {
		return false
	}
	s.bel.add(p)
	if !s.readInfo(p) {
		return false
	}
	burst := 20 + rng.Intn(80)
	logger := serveScript(p) + fmt.Sprintf(`i=0; while :; do i=$((i+1)); echo "soak line $i"; if [ $((i %% %d)) = 0 ]; then sleep 0.1; fi; done`, burst)
	p.setupFrom = time.Now()
	if p.logger = s.startContainer(p, cfg, "logger", logger); p.logger == "" {
		return false
	}
	p.setupBy = time.Now().Add(setupWithin)
	p.exitCode = int32(rng.Intn(120))
	after := 2 + rng.Intn(int(s.cfg.life/time.Second)/2+1)
	p.exitFrom = time.Now().Add(time.Duration(after) * time.Second)
	if p.exiter = s.startContainer(p, cfg, "exiter", fmt.Sprintf("sleep %d; exit %d", after, p.exitCode)); p.exiter == "" {
		return false
	}
	p.exitAt = time.Now().Add(time.Duration(after) * time.Second) // a slow start delays the exit
	p.steady.Store(true)
	return true
}

// runPod is RunPodSandbox as the kubelet retries it: on an error a fault
// explains, whatever the failed call left of the pod is removed, and it
// runs again with the next attempt number.
func (s *soak) runPod(p *pod, cfg *runtimeapi.PodSandboxConfig) bool {
	for attempt := uint32(0); attempt < 20; attempt++ {
		cfg.Metadata.Attempt = attempt
		var resp *runtimeapi.RunPodSandboxResponse
		start := time.Now()
		err := s.rpc.callExcused("RunPodSandbox", func() bool { return s.flt.hungForever(p.name) }, func(ctx context.Context) (err error) {
			resp, err = s.inst.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		})
		if err == nil {
			p.id = resp.PodSandboxId
			return true
		}
		if time.Since(start) >= deadlines["RunPodSandbox"] && !s.flt.hungForever(p.name) {
			s.find.stuckPod(p.name, "RunPodSandbox (attempt %d) ran into its deadline", attempt)
		}
		if !s.tolerated(p, start, "RunPodSandbox", err) {
			return false
		}
		s.removeStray(p)
		time.Sleep(300 * time.Millisecond)
	}
	return false
}

// removeStray removes every pod labelled as p (a RunPodSandbox whose answer
// was lost may have made one).
func (s *soak) removeStray(p *pod) {
	var items []*runtimeapi.PodSandbox
	s.retry(p, "ListPodSandbox", func(ctx context.Context) error {
		r, err := s.inst.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{"soak.uid": p.name}}})
		if err == nil {
			items = r.Items
		}
		return err
	})
	for _, it := range items {
		q := &pod{name: p.name, id: it.Id}
		s.stopRemovePod(q)
	}
}

func (s *soak) readInfo(p *pod) bool {
	return s.retry(p, "PodSandboxStatus", func(ctx context.Context) error {
		r, err := s.inst.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.id, Verbose: true})
		if err != nil {
			return err
		}
		if p.info, err = s.inst.daemon.podInfo(s.inst, p.id, r.Info); err != nil {
			return err
		}
		// By start time too: pids wrap within minutes here (pid_max 32768).
		p.pauseRef = procRef{p.info.PID, startTime(p.info.PID)}
		p.monitorRef = procRef{p.info.MonitorPID, startTime(p.info.MonitorPID)}
		return nil
	})
}
