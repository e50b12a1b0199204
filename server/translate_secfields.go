package server

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/sandbox"
)

// containerUserNSFromCRI reads a container's userns_options; nil stays nil
// (the container follows its pod).
func containerUserNSFromCRI(u *runtimeapi.UserNamespace) *container.UserNSOption {
	if u == nil {
		return nil
	}
	return &container.UserNSOption{
		Mode: container.NamespaceMode(u.GetMode()),
		UIDs: idmapsFromCRI(u.GetUids()),
		GIDs: idmapsFromCRI(u.GetGids()),
	}
}

// cgroupNSFromCRI reads a container's cgroupns_options; nil stays nil (the
// runtime's default).
func cgroupNSFromCRI(c *runtimeapi.CgroupNamespace) *container.NamespaceMode {
	if c == nil {
		return nil
	}
	m := container.NamespaceMode(c.GetMode())
	return &m
}

// idmapsFromCRI converts ID mappings; none is nil.
func idmapsFromCRI(ms []*runtimeapi.IDMapping) []idmap.Mapping {
	if len(ms) == 0 {
		return nil
	}
	out := make([]idmap.Mapping, 0, len(ms))
	for _, m := range ms {
		out = append(out, idmap.Mapping{ContainerID: m.GetContainerId(), HostID: m.GetHostId(), Length: m.GetLength()})
	}
	return out
}

func idmapsToCRI(ms []idmap.Mapping) []*runtimeapi.IDMapping {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*runtimeapi.IDMapping, 0, len(ms))
	for _, m := range ms {
		out = append(out, &runtimeapi.IDMapping{ContainerId: m.ContainerID, HostId: m.HostID, Length: m.Length})
	}
	return out
}

// sandboxSecurityFromCRI reads what the pod's security context asks of its
// pause (besides privileged and the namespaces, read with the config). The
// SELinux options are not read: minicri has no SELinux support (like
// containerd with enable_selinux off) and ignores them.
func sandboxSecurityFromCRI(sc *runtimeapi.LinuxSandboxSecurityContext) sandbox.Security {
	out := sandbox.Security{
		ReadonlyRootfs:     sc.GetReadonlyRootfs(),
		SupplementalGroups: sc.GetSupplementalGroups(),
		// The deprecated seccomp_profile_path is still honoured, as by
		// containerd.
		Seccomp: sandboxProfile(profileFromCRI(sc.GetSeccomp(), sc.GetSeccompProfilePath())), //nolint:staticcheck // see above
	}
	if u := sc.GetRunAsUser(); u != nil {
		v := u.GetValue()
		out.RunAsUser = &v
	}
	if g := sc.GetRunAsGroup(); g != nil {
		v := g.GetValue()
		out.RunAsGroup = &v
	}
	return out
}

// sandboxProfile names every type; any other reads as RuntimeDefault,
// never as the weakest choice.
func sandboxProfile(p container.Profile) sandbox.SeccompProfile {
	switch p.Type {
	case container.ProfileUnconfined:
		return sandbox.SeccompProfile{Type: sandbox.SeccompUnconfined}
	case container.ProfileLocalhost:
		return sandbox.SeccompProfile{Type: sandbox.SeccompLocalhost, Path: p.Path}
	case container.ProfileOCI:
		return sandbox.SeccompProfile{Type: sandbox.SeccompOCI, Path: p.Path, Ref: p.Ref}
	}
	return sandbox.SeccompProfile{Type: sandbox.SeccompRuntimeDefault}
}
