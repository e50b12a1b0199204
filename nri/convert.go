package nri

import (
	"strings"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// podToNRI is a pod as plugins see it.
func podToNRI(pod hook.Pod) *api.PodSandbox {
	return &api.PodSandbox{
		Id:             pod.ID,
		Name:           pod.Name,
		Uid:            pod.UID,
		Namespace:      pod.Namespace,
		Labels:         pod.Labels,
		Annotations:    pod.Annotations,
		RuntimeHandler: pod.RuntimeHandler,
		Linux: &api.LinuxPodSandbox{
			CgroupParent: pod.CgroupParent,
			CgroupsPath:  pod.CgroupPath,
			Namespaces:   podNamespaces(pod),
			PodOverhead:  podResourcesToNRI(pod.Overhead),
			PodResources: podResourcesToNRI(pod.Resources),
		},
		Pid: uint32(max(pod.PausePID, 0)), //nolint:gosec // a PID
		Ips: pod.IPs,
	}
}

// podNamespaces are the pod's own namespaces, as paths of its pause.
func podNamespaces(pod hook.Pod) []*api.LinuxNamespace {
	var out []*api.LinuxNamespace
	if pod.NetNSPath != "" {
		out = append(out, &api.LinuxNamespace{Type: string(specs.NetworkNamespace), Path: pod.NetNSPath})
	}
	return out
}

// containerToNRI is a container as plugins see it: from its record, and
// from its OCI spec when there is one at hand (at creation).
func containerToNRI(ctr hook.Container, spec *specs.Spec) *api.Container {
	c := &api.Container{
		Id:            ctr.ID,
		PodSandboxId:  ctr.PodID,
		Name:          ctr.Name,
		State:         stateToNRI(ctr.State),
		Labels:        ctr.Labels,
		Annotations:   ctr.Annotations,
		Args:          ctr.Args,
		Env:           ctr.Env,
		Linux:         &api.LinuxContainer{CgroupsPath: ctr.CgroupsPath},
		Pid:           uint32(max(ctr.PID, 0)), //nolint:gosec // a PID
		CreatedAt:     ctr.CreatedAt.UnixNano(),
		ExitCode:      ctr.ExitCode,
		StatusReason:  ctr.Reason,
		StatusMessage: ctr.Message,
		Image:         &api.Image{Name: ctr.ImageName, Digest: digestOf(ctr.ImageRef), ConfigDigest: ctr.ImageID},
	}
	if !ctr.StartedAt.IsZero() {
		c.StartedAt = ctr.StartedAt.UnixNano()
	}
	if !ctr.FinishedAt.IsZero() {
		c.FinishedAt = ctr.FinishedAt.UnixNano()
	}
	if u := ctr.User; u != nil {
		c.User = &api.User{Uid: u.UID, Gid: u.GID, AdditionalGids: u.Groups}
	}
	c.Linux.SeccompProfile = seccompProfileToNRI(ctr.Seccomp)
	if spec != nil {
		fromSpec(c, spec)
	}
	return c
}

// fromSpec fills what the OCI spec says of the container.
func fromSpec(c *api.Container, spec *specs.Spec) {
	c.Annotations = spec.Annotations
	c.Mounts = api.FromOCIMounts(spec.Mounts)
	c.Hooks = api.FromOCIHooks(spec.Hooks)
	if p := spec.Process; p != nil {
		c.Args, c.Env = p.Args, p.Env
		c.Rlimits = rlimitsToNRI(p.Rlimits)
		if p.OOMScoreAdj != nil {
			c.Linux.OomScoreAdj = api.Int(*p.OOMScoreAdj)
		}
		c.Linux.IoPriority = api.FromOCILinuxIOPriority(p.IOPriority)
		c.Linux.Scheduler = api.FromOCILinuxScheduler(p.Scheduler)
	}
	if l := spec.Linux; l != nil {
		c.Linux.Namespaces = api.FromOCILinuxNamespaces(l.Namespaces)
		c.Linux.Devices = api.FromOCILinuxDevices(l.Devices)
		c.Linux.Resources = api.FromOCILinuxResources(l.Resources, spec.Annotations)
		c.Linux.CgroupsPath = l.CgroupsPath
		c.Linux.Sysctl = l.Sysctl
		if l.Seccomp != nil {
			c.Linux.SeccompPolicy = api.FromOCILinuxSeccomp(l.Seccomp)
		}
	}
}

// seccompProfileToNRI is the seccomp profile the container asked for (the
// default validator tells its kinds apart).
func seccompProfileToNRI(p hook.SeccompProfile) *api.SecurityProfile {
	switch p.Type {
	case hook.SeccompRuntimeDefault:
		return &api.SecurityProfile{ProfileType: api.SecurityProfile_RUNTIME_DEFAULT}
	case hook.SeccompLocalhost:
		return &api.SecurityProfile{ProfileType: api.SecurityProfile_LOCALHOST, LocalhostRef: p.Path}
	default:
		return &api.SecurityProfile{ProfileType: api.SecurityProfile_UNCONFINED}
	}
}

func rlimitsToNRI(in []specs.POSIXRlimit) []*api.POSIXRlimit {
	out := make([]*api.POSIXRlimit, 0, len(in))
	for _, l := range in {
		out = append(out, &api.POSIXRlimit{Type: l.Type, Hard: l.Hard, Soft: l.Soft})
	}
	return out
}

func stateToNRI(s hook.ContainerState) api.ContainerState {
	switch s {
	case hook.StateCreated:
		return api.ContainerState_CONTAINER_CREATED
	case hook.StateRunning:
		return api.ContainerState_CONTAINER_RUNNING
	case hook.StateStopped:
		return api.ContainerState_CONTAINER_STOPPED
	default:
		return api.ContainerState_CONTAINER_UNKNOWN
	}
}

// digestOf is the digest of a repo digest reference ("name@sha256:...").
func digestOf(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d
	}
	return ""
}

// podResourcesToNRI converts pod-level resources.
func podResourcesToNRI(r *hook.PodResources) *api.LinuxResources {
	if r == nil {
		return nil
	}
	return api.FromOCILinuxResources(&specs.LinuxResources{
		CPU: &specs.LinuxCPU{
			Shares: ptrIf(uint64(max(r.CPUShares, 0))), Quota: ptrIf(r.CPUQuota), //nolint:gosec // non-negative
			Period: ptrIf(uint64(max(r.CPUPeriod, 0))), Cpus: r.CpusetCPUs, Mems: r.CpusetMems, //nolint:gosec // non-negative
		},
		Memory:         &specs.LinuxMemory{Limit: ptrIf(r.MemoryLimit)},
		HugepageLimits: hugepages(r.Hugepages),
		Unified:        r.Unified,
	}, nil)
}

func hugepages(m map[string]uint64) []specs.LinuxHugepageLimit {
	var out []specs.LinuxHugepageLimit
	for size, limit := range m {
		out = append(out, specs.LinuxHugepageLimit{Pagesize: size, Limit: limit})
	}
	return out
}

// ptrIf points at v, or is nil for the zero value (not set).
func ptrIf[T int64 | uint64](v T) *T {
	if v == 0 {
		return nil
	}
	return &v
}
