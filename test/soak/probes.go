package main

import (
	"context"
	"math/rand"
	"os"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// probeUntil probes the pod every few seconds until its life ends (true) or
// the run does (false: the pod is left as it is).
func (s *soak) probeUntil(ctx context.Context, p *pod, rng *rand.Rand, until time.Time) bool {
	exitChecked := false
	for n := 0; ; n++ {
		gap := time.Duration(float64(s.cfg.probe) * (0.5 + rng.Float64()))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(gap):
		}
		if time.Now().After(until) || p.faulted.Load() {
			return true
		}
		s.execProbe(p, rng, n)
		if n%4 == 1 {
			s.streamProbe(p, n/4)
		}
		s.expectState(p, p.logger, runtimeapi.ContainerState_CONTAINER_RUNNING, 0)
		if !exitChecked && time.Now().After(p.exitAt.Add(5*time.Second)) {
			s.expectState(p, p.exiter, runtimeapi.ContainerState_CONTAINER_EXITED, p.exitCode)
			exitChecked = true
		}
	}
}

// execProbe is an exec probe in the logger: "echo ok", or every third time an
// exit code of its own, which ExecSync must report as it is.
func (s *soak) execProbe(p *pod, rng *rand.Rand, n int) {
	cmd, want, wantOut := []string{"echo", "ok"}, int32(0), "ok\n"
	if n%3 == 2 {
		want = int32(1 + rng.Intn(100))
		cmd, wantOut = []string{"sh", "-c", "exit " + strconv.Itoa(int(want))}, ""
	}
	var r *runtimeapi.ExecSyncResponse
	start := time.Now()
	err := s.rpc.call("ExecSync", func(ctx context.Context) (err error) {
		r, err = s.inst.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: p.logger, Cmd: cmd, Timeout: 10})
		return err
	})
	if err != nil {
		s.tolerated(p, start, "ExecSync", err)
		return
	}
	s.probes.Add(1)
	if !p.faulted.Load() && (r.ExitCode != want || string(r.Stdout) != wantOut) {
		s.find.add("exit-code", "ExecSync %v in %s (pod %s): exit %d stdout %q stderr %q, want exit %d stdout %q",
			cmd, short(p.logger), p.name, r.ExitCode, r.Stdout, r.Stderr, want, wantOut)
	}
}

// expectState checks a container's state (and exit code when exited),
// unless the pod's monitor was killed.
func (s *soak) expectState(p *pod, id string, want runtimeapi.ContainerState, code int32) {
	st := s.containerState(p, id)
	if st == nil || p.faulted.Load() {
		return
	}
	if st.State != want {
		s.find.add("not-running", "container %s (%s, pod %s) is %v, want %v (reason %q, exit %d)",
			st.GetMetadata().GetName(), short(id), p.name, st.State, want, st.Reason, st.ExitCode)
	} else if want == runtimeapi.ContainerState_CONTAINER_EXITED && st.ExitCode != code {
		s.find.add("exit-code", "container %s (%s, pod %s) exited %d (reason %q), it exits %d",
			st.GetMetadata().GetName(), short(id), p.name, st.ExitCode, st.Reason, code)
	}
}

// tearDown checks the logger's lines, stops it (exit 137: sh as PID 1 ignores
// SIGTERM), removes the pod, then checks that nothing of it is left.
func (s *soak) tearDown(p *pod) {
	p.steady.Store(false)
	if p.id == "" {
		return
	}
	if p.faulted.Load() {
		s.waitNotReady(p)
	} else if p.logger != "" {
		s.checkLog(p)
		s.retry(p, "StopContainer", func(ctx context.Context) error {
			_, err := s.inst.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: p.logger, Timeout: 2})
			return err
		})
		s.expectState(p, p.logger, runtimeapi.ContainerState_CONTAINER_EXITED, 137)
	}
	s.stopRemovePod(p)
	s.bel.remove(p.id)
	s.checkPodGone(p)
	_ = os.RemoveAll(p.logDir)
}

func (s *soak) stopRemovePod(p *pod) {
	if !s.retry(p, "StopPodSandbox", func(ctx context.Context) error {
		_, err := s.inst.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.id})
		return err
	}) {
		s.find.stuckPod(p.name, "StopPodSandbox of %s failed", short(p.id))
	}
	if !s.retry(p, "RemovePodSandbox", func(ctx context.Context) error {
		_, err := s.inst.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.id})
		return err
	}) {
		s.find.stuckPod(p.name, "RemovePodSandbox of %s failed", short(p.id))
	}
}

// waitNotReady: a pod whose monitor died reads NOTREADY within 15 s.
func (s *soak) waitNotReady(p *pod) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		var st runtimeapi.PodSandboxState
		ok := s.retry(p, "PodSandboxStatus", func(ctx context.Context) error {
			r, err := s.inst.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.id})
			if err == nil {
				st = r.Status.State
			}
			return err
		})
		if !ok || st == runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return
		}
		if time.Now().After(deadline) {
			s.find.add("convergence", "pod %s (%s): %s killed, still %v after 15 s", p.name, short(p.id), s.inst.daemon.monitor(), st)
			s.find.stuckPod(p.name, "%s killed, still %v after 15 s", s.inst.daemon.monitor(), st)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
