package server

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/network"
	"github.com/minicri/minicri/sandbox"
)

// sandboxConfig translates the CRI pod config into the domain's.
func sandboxConfig(c *runtimeapi.PodSandboxConfig, handler string) sandbox.Config {
	md := c.GetMetadata()
	cfg := sandbox.Config{
		Metadata: sandbox.Metadata{
			Name: md.GetName(), UID: md.GetUid(), Namespace: md.GetNamespace(), Attempt: md.GetAttempt(),
		},
		Hostname:       c.GetHostname(),
		LogDirectory:   c.GetLogDirectory(),
		Labels:         c.GetLabels(),
		Annotations:    c.GetAnnotations(),
		CgroupParent:   c.GetLinux().GetCgroupParent(),
		Sysctls:        c.GetLinux().GetSysctls(),
		Privileged:     c.GetLinux().GetSecurityContext().GetPrivileged(),
		RuntimeHandler: handler,
		Security:       sandboxSecurityFromCRI(c.GetLinux().GetSecurityContext()),
		Overhead:       podResources(c.GetLinux().GetOverhead()),
		Resources:      podResources(c.GetLinux().GetResources()),
	}
	if dns := c.GetDnsConfig(); dns != nil {
		cfg.DNS = &sandbox.DNS{Servers: dns.GetServers(), Searches: dns.GetSearches(), Options: dns.GetOptions()}
	}
	for _, pm := range c.GetPortMappings() {
		cfg.PortMappings = append(cfg.PortMappings, network.PortMapping{
			HostPort:      pm.GetHostPort(),
			ContainerPort: pm.GetContainerPort(),
			Protocol:      protocolName(pm.GetProtocol()),
			HostIP:        pm.GetHostIp(),
		})
	}
	if o := c.GetLinux().GetSecurityContext().GetNamespaceOptions(); o != nil {
		cfg.Namespaces = sandbox.Namespaces{
			Network:  modeFromCRI(o.GetNetwork()),
			PID:      modeFromCRI(o.GetPid()),
			IPC:      modeFromCRI(o.GetIpc()),
			TargetID: o.GetTargetId(),
			UserNS:   userNSFromCRI(o.GetUsernsOptions()),
			// Must be nil for a pod: sandbox refuses it.
			CgroupNSSet: o.GetCgroupnsOptions() != nil,
		}
	}
	return cfg
}

func userNSFromCRI(u *runtimeapi.UserNamespace) *sandbox.UserNS {
	if u == nil {
		return nil
	}
	return &sandbox.UserNS{Mode: modeFromCRI(u.GetMode()), UIDs: idMappingsFromCRI(u.GetUids()), GIDs: idMappingsFromCRI(u.GetGids())}
}

func idMappingsFromCRI(ms []*runtimeapi.IDMapping) []sandbox.IDMapping {
	out := make([]sandbox.IDMapping, 0, len(ms))
	for _, m := range ms {
		out = append(out, sandbox.IDMapping{ContainerID: m.GetContainerId(), HostID: m.GetHostId(), Length: m.GetLength()})
	}
	return out
}

func userNSToCRI(u *sandbox.UserNS) *runtimeapi.UserNamespace {
	if u == nil {
		return nil
	}
	out := &runtimeapi.UserNamespace{Mode: modeToCRI(u.Mode)}
	for _, m := range u.UIDs {
		out.Uids = append(out.Uids, &runtimeapi.IDMapping{ContainerId: m.ContainerID, HostId: m.HostID, Length: m.Length})
	}
	for _, m := range u.GIDs {
		out.Gids = append(out.Gids, &runtimeapi.IDMapping{ContainerId: m.ContainerID, HostId: m.HostID, Length: m.Length})
	}
	return out
}

func protocolName(p runtimeapi.Protocol) string {
	switch p {
	case runtimeapi.Protocol_UDP:
		return "udp"
	case runtimeapi.Protocol_SCTP:
		return "sctp"
	}
	return "tcp"
}

var modes = []struct {
	cri    runtimeapi.NamespaceMode
	domain sandbox.NamespaceMode
}{
	{runtimeapi.NamespaceMode_POD, sandbox.ModePod},
	{runtimeapi.NamespaceMode_CONTAINER, sandbox.ModeContainer},
	{runtimeapi.NamespaceMode_NODE, sandbox.ModeNode},
	{runtimeapi.NamespaceMode_TARGET, sandbox.ModeTarget},
}

func modeFromCRI(m runtimeapi.NamespaceMode) sandbox.NamespaceMode {
	for _, p := range modes {
		if p.cri == m {
			return p.domain
		}
	}
	return sandbox.ModePod
}

func modeToCRI(m sandbox.NamespaceMode) runtimeapi.NamespaceMode {
	for _, p := range modes {
		if p.domain == m {
			return p.cri
		}
	}
	return runtimeapi.NamespaceMode_POD
}

func namespacesToCRI(ns sandbox.Namespaces) *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network:       modeToCRI(ns.Network),
		Pid:           modeToCRI(ns.PID),
		Ipc:           modeToCRI(ns.IPC),
		TargetId:      ns.TargetID,
		UsernsOptions: userNSToCRI(ns.UserNS),
	}
}

func metadataToCRI(md sandbox.Metadata) *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: md.Name, Uid: md.UID, Namespace: md.Namespace, Attempt: md.Attempt}
}
