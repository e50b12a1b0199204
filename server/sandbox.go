package server

import (
	"context"
	"encoding/json"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/sandbox"
)

// RunPodSandbox creates and starts a pod sandbox.
func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	if req.GetConfig() == nil {
		return nil, invalid("config is required")
	}
	if req.GetConfig().GetMetadata() == nil {
		return nil, invalid("config.metadata is required")
	}
	if err := checkSandboxProfiles(req.GetConfig().GetLinux().GetSecurityContext()); err != nil {
		return nil, err
	}
	id, err := s.sandboxes.Run(ctx, sandboxConfig(req.GetConfig(), req.GetRuntimeHandler()))
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox stops a pod sandbox; unknown IDs are not an error.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is required")
	}
	if err := s.sandboxes.Stop(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes a pod sandbox; unknown IDs are not an error.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is required")
	}
	if err := s.sandboxes.Remove(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports one sandbox.
func (s *Server) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	stamp := time.Now() // before reading: see pleg.go
	info, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{
		Status: podSandboxStatus(info), ContainersStatuses: s.containersStatuses(info.ID), Timestamp: stamp.UnixNano(),
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": verboseInfo(info)}
	}
	return resp, nil
}

// ListPodSandbox lists sandboxes with the CRI filter.
func (s *Server) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	var f sandbox.Filter
	if cf := req.GetFilter(); cf != nil {
		f.ID = cf.GetId()
		f.LabelSelector = cf.GetLabelSelector()
		if st := cf.GetState(); st != nil {
			state := sandbox.StateNotReady
			if st.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				state = sandbox.StateReady
			}
			f.State = &state
		}
	}
	infos := s.sandboxes.List(f)
	items := make([]*runtimeapi.PodSandbox, 0, len(infos))
	for _, info := range infos {
		items = append(items, &runtimeapi.PodSandbox{
			Id:             info.ID,
			Metadata:       metadataToCRI(info.Config.Metadata),
			State:          stateToCRI(info),
			CreatedAt:      info.CreatedAt.UnixNano(),
			Labels:         info.Config.Labels,
			Annotations:    info.Config.Annotations,
			RuntimeHandler: info.Config.RuntimeHandler,
		})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func podSandboxStatus(info sandbox.Info) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             info.ID,
		Metadata:       metadataToCRI(info.Config.Metadata),
		State:          stateToCRI(info),
		CreatedAt:      info.CreatedAt.UnixNano(),
		Network:        &runtimeapi.PodSandboxNetworkStatus{},
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: namespacesToCRI(info.Config.Namespaces)}},
		Labels:         info.Config.Labels,
		Annotations:    info.Config.Annotations,
		RuntimeHandler: info.Config.RuntimeHandler,
	}
	if ips := info.Status.IPs; len(ips) > 0 {
		st.Network.Ip = ips[0]
		for _, ip := range ips[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return st
}

func stateToCRI(info sandbox.Info) runtimeapi.PodSandboxState {
	if info.Ready {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func verboseInfo(info sandbox.Info) string {
	b, _ := json.Marshal(map[string]any{
		"pid":              info.Status.Pause.PID,
		"monitorPid":       info.Status.Monitor.PID,
		"netNamespacePath": info.NetNSPath,
		"shmPath":          info.ShmPath,
		"cgroupPath":       info.CgroupDir,
		"network":          info.Status.Network,
		"state":            info.Status.State,
		"config":           info.Config,
	})
	return string(b)
}
