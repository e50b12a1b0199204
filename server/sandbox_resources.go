package server

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/sandbox"
)

// UpdatePodSandboxResources accepts the pod-level overhead and resources the
// kubelet has just applied, passes them to NRI plugins, and changes nothing
// itself.
//
// The CRI calls it after the kubelet has reconfigured the pod-level cgroup,
// and treats it as best effort: a failure does not block the resize.
// minicri uses the cgroupfs driver and the kubelet manages the pod-level
// cgroup itself (LinuxPodSandboxConfig.CgroupParent is the kubelet's pod
// cgroup), so there is no runtime-owned pod cgroup to change: the cgroups
// minicri creates under it, the pause's and each container's, are leaves
// that carry no pod-level limits, and container limits are changed through
// UpdateContainerResources. Like containerd, which only forwards this call to
// NRI, minicri validates the request (a missing ID is InvalidArgument, an
// unknown sandbox NotFound), logs the new overhead and resources at info
// level with the pod ID, and returns success.
func (s *Server) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is required")
	}
	info, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	s.log.Info("pod sandbox resources updated by the kubelet; no runtime-owned pod cgroup to change",
		"pod", info.ID, "overhead", req.GetOverhead().String(), "resources", req.GetResources().String())
	if err := s.sandboxes.UpdateResources(ctx, info.ID, podResources(req.GetOverhead()), podResources(req.GetResources())); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// podResources translates CRI pod-level resources (nil stays nil).
func podResources(r *runtimeapi.LinuxContainerResources) *sandbox.PodResources {
	if r == nil {
		return nil
	}
	return &sandbox.PodResources{
		CPUPeriod: r.GetCpuPeriod(), CPUQuota: r.GetCpuQuota(), CPUShares: r.GetCpuShares(),
		MemoryLimit: r.GetMemoryLimitInBytes(), CpusetCPUs: r.GetCpusetCpus(), CpusetMems: r.GetCpusetMems(),
		Unified: r.GetUnified(), Hugepages: hugepagesFromCRI(r.GetHugepageLimits()),
	}
}
