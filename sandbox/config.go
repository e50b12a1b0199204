// Package sandbox manages pod sandboxes: a pinned network namespace wired by
// CNI, a pause process holding the pod's IPC/UTS (and PID) namespaces started
// by the pod's monitor, the pod's files, /dev/shm and cgroup. Each sandbox is
// an explicit state machine whose record is written atomically before a new
// state is published.
package sandbox

import (
	"strconv"

	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/network"
)

// NamespaceMode says whose namespace a pod uses.
type NamespaceMode int

// The modes of the CRI's NamespaceOption.
const (
	ModePod       NamespaceMode = iota // the pod's own
	ModeContainer                      // each container's own (PID only)
	ModeNode                           // the host's
	ModeTarget                         // another container's (PID only)
)

// Namespaces is the pod's NamespaceOption.
type Namespaces struct {
	Network  NamespaceMode `json:"network"`
	PID      NamespaceMode `json:"pid"`
	IPC      NamespaceMode `json:"ipc"`
	TargetID string        `json:"target_id,omitempty"`
	// UserNS is the pod's user namespace; nil means the host's.
	UserNS *UserNS `json:"userns,omitempty"`
	// CgroupNSSet: the request has cgroupns_options, which the CRI
	// defines for containers only (refused).
	CgroupNSSet bool `json:"-"`
}

// UserNS is a CRI UserNamespace option.
type UserNS struct {
	Mode NamespaceMode `json:"mode"`
	UIDs []IDMapping   `json:"uids,omitempty"`
	GIDs []IDMapping   `json:"gids,omitempty"`
}

// IDMapping maps Length IDs from ContainerID (inside) to HostID (outside).
type IDMapping = idmap.Mapping

// OwnUserNS reports whether the pod gets a user namespace of its own.
func (n Namespaces) OwnUserNS() bool { return n.UserNS != nil && n.UserNS.Mode == ModePod }

// DNS is the pod's DNSConfig.
type DNS struct {
	Servers  []string `json:"servers,omitempty"`
	Searches []string `json:"searches,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// Metadata names a pod the way the kubelet does.
type Metadata struct {
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Attempt   uint32 `json:"attempt"`
}

// Config is everything minicri needs to create a pod sandbox.
type Config struct {
	Metadata       Metadata              `json:"metadata"`
	Hostname       string                `json:"hostname,omitempty"`
	LogDirectory   string                `json:"log_directory,omitempty"`
	DNS            *DNS                  `json:"dns,omitempty"`
	PortMappings   []network.PortMapping `json:"port_mappings,omitempty"`
	Labels         map[string]string     `json:"labels,omitempty"`
	Annotations    map[string]string     `json:"annotations,omitempty"`
	CgroupParent   string                `json:"cgroup_parent,omitempty"`
	Sysctls        map[string]string     `json:"sysctls,omitempty"`
	Namespaces     Namespaces            `json:"namespaces"`
	Privileged     bool                  `json:"privileged,omitempty"`
	RuntimeHandler string                `json:"runtime_handler,omitempty"`
	Security       Security              `json:"security"`
	// Overhead and Resources are the pod-level resources the kubelet
	// sizes the pod's cgroup by (it sets them itself); NRI plugins see them.
	Overhead  *PodResources `json:"overhead,omitempty"`
	Resources *PodResources `json:"resources,omitempty"`
}

// key identifies the pod for duplicate-request detection. Each field is
// quoted, so that no two metadata share a key (joined plainly, namespace
// "a/b" with name "c" and namespace "a" with name "b/c" would).
func (m Metadata) key() string {
	return strconv.Quote(m.Namespace) + "/" + strconv.Quote(m.Name) + "/" + strconv.Quote(m.UID) + "/" + strconv.FormatUint(uint64(m.Attempt), 10)
}
