// Package container manages app containers: their records and state
// machine, OCI runtime specs built from the CRI config and the image, and
// their lifecycle through the pod's monitor, which drives libcontainer.
package container

import (
	"github.com/minicri/minicri/devices"
	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/security"
	"github.com/minicri/minicri/user"
)

// Propagation is a mount's propagation mode.
type Propagation int

// The CRI's MountPropagation values.
const (
	PropagationPrivate         Propagation = iota // private
	PropagationHostToContainer                    // rslave
	PropagationBidirectional                      // rshared
)

// Mount is one CRI mount.
type Mount struct {
	ContainerPath     string      `json:"container_path"`
	HostPath          string      `json:"host_path,omitempty"`
	Readonly          bool        `json:"readonly,omitempty"`
	RecursiveReadOnly bool        `json:"recursive_read_only,omitempty"`
	Propagation       Propagation `json:"propagation,omitempty"`
	SelinuxRelabel    bool        `json:"selinux_relabel,omitempty"`
	// Image, when set, names an image whose filesystem is mounted read-only
	// (KEP-4639); ImageSubPath selects a directory of it.
	Image        string `json:"image,omitempty"`
	ImageSubPath string `json:"image_sub_path,omitempty"`
	// UIDMappings and GIDMappings, when set, make the bind an idmapped
	// mount (KEP-127; see idmapmounts.go). An image mount ignores them: it
	// is always seen through the pod's user namespace.
	UIDMappings []IDMapping `json:"uid_mappings,omitempty"`
	GIDMappings []IDMapping `json:"gid_mappings,omitempty"`

	// MountOptions are extra bind options (noexec, nodev, nosuid; KEP-5855,
	// see mountoptions.go).
	MountOptions []string `json:"mount_options,omitempty"`
}

// Device is one CRI device.
type Device = devices.Device

// Resources are the container's cgroup limits.
type Resources struct {
	CPUPeriod       int64             `json:"cpu_period,omitempty"`
	CPUQuota        int64             `json:"cpu_quota,omitempty"`
	CPUShares       int64             `json:"cpu_shares,omitempty"`
	MemoryLimit     int64             `json:"memory_limit,omitempty"`
	MemorySwapLimit int64             `json:"memory_swap_limit,omitempty"`
	OOMScoreAdj     int64             `json:"oom_score_adj,omitempty"`
	CpusetCPUs      string            `json:"cpuset_cpus,omitempty"`
	CpusetMems      string            `json:"cpuset_mems,omitempty"`
	Hugepages       map[string]uint64 `json:"hugepages,omitempty"` // page size ("2MB") -> limit in bytes
	Unified         map[string]string `json:"unified,omitempty"`
}

// ProfileType selects a seccomp or AppArmor profile.
type ProfileType = security.ProfileType

// The CRI's SecurityProfile types (see security.ProfileType).
const (
	ProfileRuntimeDefault = security.ProfileRuntimeDefault
	ProfileUnconfined     = security.ProfileUnconfined
	ProfileLocalhost      = security.ProfileLocalhost
	ProfileUnspecified    = security.ProfileUnspecified
	ProfileOCI            = security.ProfileOCI
)

// Profile is a seccomp or AppArmor profile choice.
type Profile = security.Profile

// SupplementalGroupsPolicy is the CRI's policy for the image's groups.
type SupplementalGroupsPolicy = user.GroupsPolicy

// Merge adds the groups the image's /etc/group gives the user; Strict does not.
const (
	GroupsMerge  = user.GroupsMerge
	GroupsStrict = user.GroupsStrict
)

// NamespaceMode says whose namespace the container uses.
type NamespaceMode int

// The CRI's NamespaceMode values.
const (
	ModePod NamespaceMode = iota
	ModeContainer
	ModeNode
	ModeTarget
)

// Security is the container's LinuxContainerSecurityContext.
type Security struct {
	Privileged bool          `json:"privileged,omitempty"`
	PID        NamespaceMode `json:"pid"`
	TargetID   string        `json:"target_id,omitempty"` // the full ID once created
	// Network and IPC are what the request asks for; the container always
	// joins its pod's: the host's only where the pod uses it, and never
	// CONTAINER or TARGET (see checkNamespaces).
	Network NamespaceMode `json:"network,omitempty"`
	IPC     NamespaceMode `json:"ipc,omitempty"`
	// UserNS is the request's userns_options: nil follows the pod; else it
	// must match the pod's (see checkNamespaces).
	UserNS *UserNSOption `json:"userns,omitempty"`
	// CgroupNS is the request's cgroupns_options mode (nil: the default,
	// see cgroupmount) and CgroupMountMode its cgroup_mount_mode.
	CgroupNS                 *NamespaceMode           `json:"cgroupns,omitempty"`
	CgroupMountMode          CgroupMountMode          `json:"cgroup_mount_mode,omitempty"`
	RunAsUser                *int64                   `json:"run_as_user,omitempty"`
	RunAsGroup               *int64                   `json:"run_as_group,omitempty"`
	RunAsUsername            string                   `json:"run_as_username,omitempty"`
	ReadonlyRootfs           bool                     `json:"readonly_rootfs,omitempty"`
	SupplementalGroups       []int64                  `json:"supplemental_groups,omitempty"`
	SupplementalGroupsPolicy SupplementalGroupsPolicy `json:"supplemental_groups_policy,omitempty"`
	NoNewPrivs               bool                     `json:"no_new_privs,omitempty"`
	// MaskedPaths and ReadonlyPaths are used exactly (nil or empty: none).
	MaskedPaths   []string `json:"masked_paths"`
	ReadonlyPaths []string `json:"readonly_paths"`
	CapAdd        []string `json:"cap_add,omitempty"`
	CapDrop       []string `json:"cap_drop,omitempty"`
	AmbientAdd    []string `json:"ambient_add,omitempty"`
	Seccomp       Profile  `json:"seccomp"`
	AppArmor      Profile  `json:"apparmor"`
}

// UserNSOption is a container's userns_options.
type UserNSOption struct {
	Mode NamespaceMode `json:"mode"`
	UIDs []IDMapping   `json:"uids,omitempty"`
	GIDs []IDMapping   `json:"gids,omitempty"`
}

// Config is everything the kubelet asks of a container.
type Config struct {
	Name        string            `json:"name"`
	Attempt     uint32            `json:"attempt"`
	Image       string            `json:"image"` // the reference as requested
	Command     []string          `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	WorkingDir  string            `json:"working_dir,omitempty"`
	Env         []string          `json:"env,omitempty"` // KEY=VALUE, in order
	Mounts      []Mount           `json:"mounts,omitempty"`
	Devices     []Device          `json:"devices,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	LogPath     string            `json:"log_path,omitempty"` // relative to the pod's log directory
	Stdin       bool              `json:"stdin,omitempty"`
	StdinOnce   bool              `json:"stdin_once,omitempty"`
	TTY         bool              `json:"tty,omitempty"`
	StopSignal  string            `json:"stop_signal,omitempty"` // e.g. "SIGTERM"; empty: the image's, else SIGTERM
	Resources   Resources         `json:"resources"`
	Security    Security          `json:"security"`

	// CDIDevices are fully qualified CDI device names (vendor.com/class=name).
	CDIDevices []string `json:"cdi_devices,omitempty"`

	// UserSpecifiedImage is the image as the pod names it (the kubelet
	// sends the image ID in Image); it names the image in the spec's
	// annotations, as in containerd (see imagename.go).
	UserSpecifiedImage string `json:"user_specified_image,omitempty"`
}

// ImageConfig is what a container takes from its image.
type ImageConfig struct {
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	User       string   `json:"user,omitempty"`
	StopSignal string   `json:"stop_signal,omitempty"`
}

// PodInfo is what a container takes from its pod sandbox.
type PodInfo struct {
	ID             string            `json:"id"`
	NetNSPath      string            `json:"netns_path,omitempty"` // empty: host network
	PausePID       int               `json:"pause_pid"`
	HostIPC        bool              `json:"host_ipc,omitempty"`
	HostPID        bool              `json:"host_pid,omitempty"`   // the pod asked for the host's PID namespace
	Privileged     bool              `json:"privileged,omitempty"` // the pod's security context is privileged
	Hostname       string            `json:"hostname,omitempty"`   // the pod's hostname as requested; empty: the host's
	HostnameFile   string            `json:"hostname_file"`
	HostsFile      string            `json:"hosts_file"`
	ResolvConfFile string            `json:"resolv_conf_file"`
	ShmPath        string            `json:"shm_path,omitempty"` // empty: the host's /dev/shm
	CgroupPath     string            `json:"cgroup_path"`        // the pause's, in cgdriver's notation
	Sysctls        map[string]string `json:"sysctls,omitempty"`
	// UserNS is the pod's own user namespace (held by the pause); nil means
	// the host's.
	UserNS *IDMappings `json:"userns,omitempty"`

	// Not used by the spec: where the pod's monitor and logs live.
	MonitorDir   string `json:"monitor_dir"`
	LogDirectory string `json:"log_directory,omitempty"`
	Ready        bool   `json:"ready"`
	// OwnCgroup: the pause's parent is the pod's own cgroup (the request
	// named a cgroup_parent, as the kubelet does), not the shared default.
	OwnCgroup bool `json:"own_cgroup,omitempty"`
	// RuntimeHandler is the pod's RuntimeClass handler ("": built-in).
	RuntimeHandler string `json:"runtime_handler,omitempty"`
}

// IDMappings are the UID and GID mappings of a user namespace.
type IDMappings = idmap.Mappings

// IDMapping maps Length IDs from ContainerID (inside) to HostID (outside).
type IDMapping = idmap.Mapping
