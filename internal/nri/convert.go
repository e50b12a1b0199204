package nri

import (
	"strings"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// podToNRI is a pod as plugins see it.
func podToNRI(info sandbox.Info) *api.PodSandbox {
	cfg := info.Config
	return &api.PodSandbox{
		Id:             info.ID,
		Name:           cfg.Metadata.Name,
		Uid:            cfg.Metadata.UID,
		Namespace:      cfg.Metadata.Namespace,
		Labels:         cfg.Labels,
		Annotations:    cfg.Annotations,
		RuntimeHandler: cfg.RuntimeHandler,
		Linux: &api.LinuxPodSandbox{
			CgroupParent: cfg.CgroupParent,
			CgroupsPath:  info.CgroupPath,
			Namespaces:   podNamespaces(info),
			PodOverhead:  podResourcesToNRI(cfg.Overhead),
			PodResources: podResourcesToNRI(cfg.Resources),
		},
		Pid: uint32(max(info.Status.Pause.PID, 0)), //nolint:gosec // a PID
		Ips: info.Status.IPs,
	}
}

// podNamespaces are the pod's own namespaces, as paths of its pause.
func podNamespaces(info sandbox.Info) []*api.LinuxNamespace {
	ns := info.Config.Namespaces
	var out []*api.LinuxNamespace
	if ns.Network != sandbox.ModeNode && info.NetNSPath != "" {
		out = append(out, &api.LinuxNamespace{Type: string(specs.NetworkNamespace), Path: info.NetNSPath})
	}
	return out
}

// containerToNRI is a container as plugins see it: from its record, and
// from its OCI spec when there is one at hand (at creation).
func containerToNRI(info container.Info, spec *specs.Spec) *api.Container {
	cfg := info.Config
	st := info.Status
	c := &api.Container{
		Id:            info.ID,
		PodSandboxId:  info.PodID,
		Name:          cfg.Name,
		State:         stateToNRI(st.State),
		Labels:        cfg.Labels,
		Annotations:   cfg.Annotations,
		Args:          append(append([]string(nil), cfg.Command...), cfg.Args...),
		Env:           cfg.Env,
		Linux:         &api.LinuxContainer{CgroupsPath: info.CgroupsPath},
		Pid:           uint32(max(st.Init.PID, 0)), //nolint:gosec // a PID
		CreatedAt:     info.CreatedAt.UnixNano(),
		ExitCode:      st.ExitCode,
		StatusReason:  st.Reason,
		StatusMessage: st.Message,
		Image:         &api.Image{Name: info.ImageName, Digest: digestOf(info.ImageRef), ConfigDigest: info.ImageID},
	}
	if !st.StartedAt.IsZero() {
		c.StartedAt = st.StartedAt.UnixNano()
	}
	if !st.FinishedAt.IsZero() {
		c.FinishedAt = st.FinishedAt.UnixNano()
	}
	if u := info.User; u != nil {
		c.User = &api.User{Uid: u.UID, Gid: u.GID, AdditionalGids: u.Groups}
	}
	c.Linux.SeccompProfile = seccompProfileToNRI(cfg.Security.Seccomp)
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
func seccompProfileToNRI(p container.Profile) *api.SecurityProfile {
	switch p.Type {
	case container.ProfileRuntimeDefault:
		return &api.SecurityProfile{ProfileType: api.SecurityProfile_RUNTIME_DEFAULT}
	case container.ProfileLocalhost:
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

func stateToNRI(s container.State) api.ContainerState {
	switch s {
	case container.StateCreated:
		return api.ContainerState_CONTAINER_CREATED
	case container.StateRunning:
		return api.ContainerState_CONTAINER_RUNNING
	case container.StateExited, container.StateRemoving:
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
func podResourcesToNRI(r *sandbox.PodResources) *api.LinuxResources {
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
