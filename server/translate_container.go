package server

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

// containerConfig translates the CRI container config into the domain's.
func containerConfig(c *runtimeapi.ContainerConfig) container.Config {
	cfg := container.Config{
		Name:        c.GetMetadata().GetName(),
		Attempt:     c.GetMetadata().GetAttempt(),
		Image:       c.GetImage().GetImage(),
		Command:     c.GetCommand(),
		Args:        c.GetArgs(),
		WorkingDir:  c.GetWorkingDir(),
		Labels:      c.GetLabels(),
		Annotations: c.GetAnnotations(),
		LogPath:     c.GetLogPath(),
		Stdin:       c.GetStdin(),
		StdinOnce:   c.GetStdinOnce(),
		TTY:         c.GetTty(),
		Resources:   resourcesFromCRI(c.GetLinux().GetResources()),
		Security:    securityFromCRI(c.GetLinux().GetSecurityContext()),
	}
	cfg.UserSpecifiedImage = c.GetImage().GetUserSpecifiedImage()
	cfg.StopSignal = signalFromCRI(c.GetStopSignal())
	for _, kv := range c.GetEnvs() {
		cfg.Env = append(cfg.Env, kv.GetKey()+"="+string(kv.GetValue()))
	}
	for _, m := range c.GetMounts() {
		cfg.Mounts = append(cfg.Mounts, container.Mount{
			ContainerPath:     m.GetContainerPath(),
			HostPath:          m.GetHostPath(),
			Readonly:          m.GetReadonly(),
			RecursiveReadOnly: m.GetRecursiveReadOnly(),
			Propagation:       container.Propagation(m.GetPropagation()),
			SelinuxRelabel:    m.GetSelinuxRelabel(),
			Image:             m.GetImage().GetImage(),
			ImageSubPath:      m.GetImageSubPath(),
			UIDMappings:       idmapsFromCRI(m.GetUidMappings()),
			GIDMappings:       idmapsFromCRI(m.GetGidMappings()),
			MountOptions:      m.GetMountOptions(),
		})
	}
	for _, d := range c.GetCDIDevices() {
		cfg.CDIDevices = append(cfg.CDIDevices, d.GetName())
	}
	for _, d := range c.GetDevices() {
		cfg.Devices = append(cfg.Devices, container.Device{
			ContainerPath: d.GetContainerPath(), HostPath: d.GetHostPath(), Permissions: d.GetPermissions(),
		})
	}
	return cfg
}

func resourcesFromCRI(r *runtimeapi.LinuxContainerResources) container.Resources {
	if r == nil {
		return container.Resources{}
	}
	out := container.Resources{
		CPUPeriod: r.GetCpuPeriod(), CPUQuota: r.GetCpuQuota(), CPUShares: r.GetCpuShares(),
		MemoryLimit: r.GetMemoryLimitInBytes(), MemorySwapLimit: r.GetMemorySwapLimitInBytes(),
		OOMScoreAdj: r.GetOomScoreAdj(), CpusetCPUs: r.GetCpusetCpus(), CpusetMems: r.GetCpusetMems(),
		Unified: r.GetUnified(), Hugepages: hugepagesFromCRI(r.GetHugepageLimits()),
	}
	return out
}

// hugepagesFromCRI maps page sizes to limits; nil when there are none.
func hugepagesFromCRI(limits []*runtimeapi.HugepageLimit) map[string]uint64 {
	var out map[string]uint64
	for _, h := range limits {
		if out == nil {
			out = map[string]uint64{}
		}
		out[h.GetPageSize()] = h.GetLimit()
	}
	return out
}

func resourcesToCRI(r container.Resources) *runtimeapi.LinuxContainerResources {
	out := &runtimeapi.LinuxContainerResources{
		CpuPeriod: r.CPUPeriod, CpuQuota: r.CPUQuota, CpuShares: r.CPUShares,
		MemoryLimitInBytes: r.MemoryLimit, MemorySwapLimitInBytes: r.MemorySwapLimit,
		OomScoreAdj: r.OOMScoreAdj, CpusetCpus: r.CpusetCPUs, CpusetMems: r.CpusetMems, Unified: r.Unified,
	}
	for size, limit := range r.Hugepages {
		out.HugepageLimits = append(out.HugepageLimits, &runtimeapi.HugepageLimit{PageSize: size, Limit: limit})
	}
	return out
}

func securityFromCRI(s *runtimeapi.LinuxContainerSecurityContext) container.Security {
	out := container.Security{
		Privileged:               s.GetPrivileged(),
		PID:                      container.NamespaceMode(s.GetNamespaceOptions().GetPid()),
		TargetID:                 s.GetNamespaceOptions().GetTargetId(),
		Network:                  container.NamespaceMode(s.GetNamespaceOptions().GetNetwork()),
		IPC:                      container.NamespaceMode(s.GetNamespaceOptions().GetIpc()),
		UserNS:                   containerUserNSFromCRI(s.GetNamespaceOptions().GetUsernsOptions()),
		CgroupNS:                 cgroupNSFromCRI(s.GetNamespaceOptions().GetCgroupnsOptions()),
		CgroupMountMode:          container.CgroupMountMode(s.GetCgroupMountMode()),
		RunAsUsername:            s.GetRunAsUsername(),
		ReadonlyRootfs:           s.GetReadonlyRootfs(),
		SupplementalGroups:       s.GetSupplementalGroups(),
		SupplementalGroupsPolicy: container.SupplementalGroupsPolicy(s.GetSupplementalGroupsPolicy()),
		NoNewPrivs:               s.GetNoNewPrivs(),
		MaskedPaths:              s.GetMaskedPaths(),
		ReadonlyPaths:            s.GetReadonlyPaths(),
		CapAdd:                   s.GetCapabilities().GetAddCapabilities(),
		CapDrop:                  s.GetCapabilities().GetDropCapabilities(),
		AmbientAdd:               s.GetCapabilities().GetAddAmbientCapabilities(),
		// The deprecated *_profile_path/apparmor_profile fields are still sent
		// by older kubelets, and containerd still honours them.
		Seccomp:  profileFromCRI(s.GetSeccomp(), s.GetSeccompProfilePath()), //nolint:staticcheck // see above
		AppArmor: appArmorFromCRI(s.GetApparmor(), s.GetApparmorProfile()),  //nolint:staticcheck // see above
	}
	if u := s.GetRunAsUser(); u != nil {
		v := u.GetValue()
		out.RunAsUser = &v
	}
	if g := s.GetRunAsGroup(); g != nil {
		v := g.GetValue()
		out.RunAsGroup = &v
	}
	return out
}

// containerStates pairs the domain's states with the CRI's; the others
// (creating, removing) read as unknown.
var containerStates = []struct {
	domain container.State
	cri    runtimeapi.ContainerState
}{
	{container.StateCreated, runtimeapi.ContainerState_CONTAINER_CREATED},
	{container.StateRunning, runtimeapi.ContainerState_CONTAINER_RUNNING},
	{container.StateExited, runtimeapi.ContainerState_CONTAINER_EXITED},
}

func containerStateToCRI(s container.State) runtimeapi.ContainerState {
	for _, p := range containerStates {
		if p.domain == s {
			return p.cri
		}
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func containerStateFromCRI(s runtimeapi.ContainerState) container.State {
	for _, p := range containerStates {
		if p.cri == s {
			return p.domain
		}
	}
	return container.State("unknown")
}

// mountsToCRI reports the mounts; an image mount carries the image as
// requested and the ID of the image it mounted (ImageSpec.image_ref).
func mountsToCRI(ms []container.Mount, ims []container.ImageMount) []*runtimeapi.Mount {
	out := make([]*runtimeapi.Mount, 0, len(ms))
	for _, m := range ms {
		cm := &runtimeapi.Mount{
			ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.Readonly,
			RecursiveReadOnly: m.RecursiveReadOnly, SelinuxRelabel: m.SelinuxRelabel,
			Propagation: runtimeapi.MountPropagation(m.Propagation), ImageSubPath: m.ImageSubPath, //nolint:gosec // one of the three CRI propagation values, checked on the way in
			UidMappings: idmapsToCRI(m.UIDMappings), GidMappings: idmapsToCRI(m.GIDMappings),
			MountOptions: m.MountOptions,
		}
		if m.Image != "" {
			cm.Image = &runtimeapi.ImageSpec{Image: m.Image}
			for _, im := range ims {
				if im.ContainerPath == m.ContainerPath {
					cm.Image.ImageRef = im.ImageID
					break
				}
			}
		}
		out = append(out, cm)
	}
	return out
}
