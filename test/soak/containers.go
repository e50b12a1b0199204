package main

import (
	"context"
	"encoding/json"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// tolerated reports whether a fault explains err (the call overlapped a
// daemon kill or a full disk, or the pod's monitor was killed); otherwise
// the error is a finding.
func (s *soak) tolerated(p *pod, start time.Time, name string, err error, kinds ...string) bool {
	if len(kinds) == 0 {
		kinds = []string{"daemon-kill", "enospc", "cni-hang", "cni-fail", "cni-hang-forever"}
	}
	if s.flt.during(start, time.Now(), kinds...) || (p != nil && p.faulted.Load()) {
		s.rpc.tolerate(name, err)
		return true
	}
	s.find.add("error", "%s%s: %v", name, who(p), err)
	return false
}

func who(p *pod) string {
	if p == nil {
		return ""
	}
	return " (pod " + p.name + " " + short(p.id) + ")"
}

// retry runs an idempotent RPC until it succeeds, for as long as faults
// explain its errors (at most 2 min).
func (s *soak) retry(p *pod, name string, f func(ctx context.Context) error) bool {
	until := time.Now().Add(2 * time.Minute)
	for {
		start := time.Now()
		err := s.rpc.call(name, f)
		if err == nil {
			return true
		}
		if !s.tolerated(p, start, name, err) {
			return false
		}
		if time.Now().After(until) {
			s.find.add("error", "%s%s: still failing after 2 min of retries: %v", name, who(p), err)
			return false
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func containerConfig(p *pod, name, script string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: busybox},
		Command:  []string{"sh", "-c", script},
		LogPath:  name + ".log",
		Labels:   map[string]string{"soak.uid": p.name, "soak.name": name},
		// As the kubelet sends them: each container in a PID namespace of its own.
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD,
				Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}}},
	}
}

// startContainer creates and starts one container, as the kubelet would
// across faults: a create whose answer was lost is found by its labels and
// removed before the next attempt; a start whose answer was lost shows in
// the container's state. It returns the container's id, "" on failure.
func (s *soak) startContainer(p *pod, pcfg *runtimeapi.PodSandboxConfig, name, script string) string {
	cfg := containerConfig(p, name, script)
	var id string
	for attempt := uint32(0); attempt < 20 && id == ""; attempt++ {
		cfg.Metadata.Attempt = attempt
		start := time.Now()
		err := s.rpc.call("CreateContainer", func(ctx context.Context) error {
			r, err := s.inst.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p.id, Config: cfg, SandboxConfig: pcfg})
			if err == nil {
				id = r.ContainerId
			}
			return err
		})
		if err != nil && (!s.tolerated(p, start, "CreateContainer", err) || p.faulted.Load()) {
			return ""
		}
		if err != nil {
			s.removeStrayContainers(p, name)
			time.Sleep(300 * time.Millisecond)
		}
	}
	for id != "" {
		start := time.Now()
		err := s.rpc.call("StartContainer", func(ctx context.Context) error {
			_, err := s.inst.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
			return err
		})
		if err == nil {
			s.notePID(p, id)
			return id
		}
		if !s.tolerated(p, start, "StartContainer", err) || p.faulted.Load() {
			return ""
		}
		st := s.containerState(p, id)
		if st != nil && st.State == runtimeapi.ContainerState_CONTAINER_EXITED && st.Reason == "StartError" {
			return "" // the start failed and ended the container (containerd's, on a full root)
		}
		if st != nil && st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			return id // the start went through
		}
		time.Sleep(300 * time.Millisecond)
	}
	return ""
}

func (s *soak) removeStrayContainers(p *pod, name string) {
	var items []*runtimeapi.Container
	s.retry(p, "ListContainers", func(ctx context.Context) error {
		r, err := s.inst.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			PodSandboxId: p.id, LabelSelector: map[string]string{"soak.name": name}}})
		if err == nil {
			items = r.Containers
		}
		return err
	})
	for _, c := range items {
		s.retry(p, "RemoveContainer", func(ctx context.Context) error {
			_, err := s.inst.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id})
			return err
		})
	}
}

func (s *soak) containerState(p *pod, id string) *runtimeapi.ContainerStatus {
	var st *runtimeapi.ContainerStatus
	s.retry(p, "ContainerStatus", func(ctx context.Context) error {
		r, err := s.inst.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err == nil {
			st = r.Status
		}
		return err
	})
	return st
}

// notePID records the container's init (verbose ContainerStatus) for the
// leak check after removal.
func (s *soak) notePID(p *pod, id string) {
	var info struct {
		PID int `json:"pid"`
	}
	_ = s.rpc.call("ContainerStatus", func(ctx context.Context) error {
		r, err := s.inst.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
		if err == nil {
			err = json.Unmarshal([]byte(r.Info["info"]), &info)
		}
		return err
	})
	if st := startTime(info.PID); info.PID > 0 && st != "" {
		p.procs = append(p.procs, procRef{info.PID, st})
	}
}
