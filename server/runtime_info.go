package server

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version reports the runtime's name and versions.
func (s *Server) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       RuntimeName,
		RuntimeVersion:    RuntimeVersion,
		RuntimeApiVersion: RuntimeAPIVersion,
	}, nil
}

// Status reports RuntimeReady and NetworkReady.
func (s *Server) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	netReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if err := s.network.Ready(); err != nil {
		netReady.Status = false
		netReady.Reason = "NetworkPluginNotReady"
		netReady.Message = err.Error()
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			netReady,
		}},
		RuntimeHandlers: s.runtimeHandlers(),
		// seccomp_profile_oci: OCI seccomp profiles of pods and containers
		// and the three security profile RPCs work (with a profile store).
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true, MountOptions: true,
			SeccompProfileOci: s.profiles != nil},
	}
	resp.Features.CgroupMountMode = s.cgroupMountMode
	if req.GetVerbose() {
		info, _ := json.Marshal(map[string]any{"runtime": RuntimeName, "version": RuntimeVersion})
		cfg, _ := json.Marshal(s.config)
		resp.Info = map[string]string{"info": string(info), "config": string(cfg)}
	}
	return resp, nil
}

// HandlerInfo is a RuntimeClass handler and its features.
type HandlerInfo struct {
	Name                    string
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool
	// CgroupNamespaces: CONTAINER and NODE cgroupns_options work for every
	// container of the handler, and the others are refused.
	CgroupNamespaces bool
}

// runtimeHandlers lists every handler with its features.
func (s *Server) runtimeHandlers() []*runtimeapi.RuntimeHandler {
	hs := s.handlers
	if len(hs) == 0 {
		// The built-in libcontainer makes "rro" mounts with mount_setattr
		// (Linux >= 5.12) and gives pods their own user namespace, with
		// idmapped rootfs mounts.
		hs = []HandlerInfo{{Name: "", RecursiveReadOnlyMounts: true, UserNamespaces: true}}
	}
	out := make([]*runtimeapi.RuntimeHandler, 0, len(hs))
	for _, h := range hs {
		out = append(out, &runtimeapi.RuntimeHandler{Name: h.Name, Features: &runtimeapi.RuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: h.RecursiveReadOnlyMounts, UserNamespaces: h.UserNamespaces,
			CgroupNamespaces: h.CgroupNamespaces,
		}})
	}
	return out
}

// RuntimeConfig reports the cgroup driver minicri uses; the kubelet follows it.
func (s *Server) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	driver := runtimeapi.CgroupDriver_CGROUPFS
	if s.systemd {
		driver = runtimeapi.CgroupDriver_SYSTEMD
	}
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: driver},
	}, nil
}

// UpdateRuntimeConfig takes the pod CIDR the kubelet assigns to this node.
func (s *Server) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr(); cidr != "" {
		if err := s.network.SetPodCIDR(cidr); err != nil {
			return nil, err
		}
		s.log.Info("pod CIDR updated", "cidr", cidr)
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
