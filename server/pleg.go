package server

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/sandbox"
)

// The kubelet's evented PLEG (EventedPLEG) takes a pod's container statuses
// from PodSandboxStatus's containers_statuses and from each event, instead
// of asking ContainerStatus per container, and keeps the newest status by
// its timestamp: a status is stamped before it is read, so an event that
// happens while it is read is newer and wins.

// containersStatuses are the statuses of every container of a pod,
// exited ones included.
func (s *Server) containersStatuses(podID string) []*runtimeapi.ContainerStatus {
	infos := s.containers.List(container.Filter{PodID: podID})
	out := make([]*runtimeapi.ContainerStatus, 0, len(infos))
	for _, c := range infos {
		out = append(out, containerStatusToCRI(c))
	}
	return out
}

// eventSandbox is the pod's status for an event: its current one, else,
// for the sandbox's own Deleted event, the last one it had.
func (s *Server) eventSandbox(e events.Event) *runtimeapi.PodSandboxStatus {
	if info, err := s.sandboxes.Get(e.PodID); err == nil {
		return podSandboxStatus(info)
	}
	if info, ok := e.Final.(sandbox.Info); ok {
		return podSandboxStatus(info)
	}
	return nil
}
