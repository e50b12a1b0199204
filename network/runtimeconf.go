package network

import (
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// cniPortMapping is the "portMappings" capability entry of portmap.
type cniPortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// runtimeConf builds the libcni arguments for pod, in netns netnsPath
// (empty when the netns is gone).
func runtimeConf(pod Pod, netnsPath string) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: pod.ID,
		NetNS:       netnsPath,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.ID},
			{"K8S_POD_UID", pod.UID},
		},
		CapabilityArgs: map[string]any{},
	}
	var pms []cniPortMapping
	for _, p := range pod.PortMappings {
		if p.HostPort <= 0 {
			continue // not a hostPort: nothing to map
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pms = append(pms, cniPortMapping{
			HostPort:      p.HostPort,
			ContainerPort: p.ContainerPort,
			Protocol:      proto,
			HostIP:        p.HostIP,
		})
	}
	if len(pms) > 0 {
		rt.CapabilityArgs["portMappings"] = pms
	}
	if pod.CgroupParent != "" {
		rt.CapabilityArgs["cgroupPath"] = pod.CgroupParent
	}
	return rt
}

// cachedRuntimeConf rebuilds the ADD arguments recorded in the cache.
func cachedRuntimeConf(att *libcni.NetworkAttachment, netnsPath string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID:    att.ContainerID,
		NetNS:          netnsPath,
		IfName:         att.IfName,
		Args:           att.CniArgs,
		CapabilityArgs: att.CapabilityArgs,
	}
}
