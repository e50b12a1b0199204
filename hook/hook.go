package hook

import (
	"errors"
	"time"
)

// ErrPermissionDenied: a hook refused the request on policy (an NRI
// validator rejected a plugin's adjustment). The server maps it to the
// gRPC code PermissionDenied.
var ErrPermissionDenied = errors.New("permission denied")

// Pod is a pod sandbox as hooks see it.
type Pod struct {
	ID             string
	Name           string
	UID            string
	Namespace      string
	Labels         map[string]string
	Annotations    map[string]string
	RuntimeHandler string
	CgroupParent   string // as the request named it
	CgroupPath     string // the pause's cgroup, in the cgroup driver's notation
	// NetNSPath is the pod's own network namespace; empty for a pod on
	// the host's network.
	NetNSPath string
	Overhead  *PodResources
	Resources *PodResources
	PausePID  int
	IPs       []string
}

// PodResources are pod-level cgroup limits.
type PodResources struct {
	CPUPeriod   int64
	CPUQuota    int64
	CPUShares   int64
	MemoryLimit int64
	CpusetCPUs  string
	CpusetMems  string
	Hugepages   map[string]uint64 // page size ("2MB") -> limit in bytes
	Unified     map[string]string
}

// ContainerState is a container's state as hooks see it.
type ContainerState int

// The container states: Unknown covers one still being created.
const (
	StateUnknown ContainerState = iota
	StateCreated
	StateRunning
	StateStopped
)

// Container is a container as hooks see it (what its record says; at
// creation the hook gets the OCI spec besides).
type Container struct {
	ID          string
	PodID       string
	Name        string
	State       ContainerState
	Labels      map[string]string
	Annotations map[string]string
	Args        []string // the request's command and args
	Env         []string
	CgroupsPath string
	PID         int // its init's, 0 when none
	CreatedAt   time.Time
	StartedAt   time.Time // zero: not started
	FinishedAt  time.Time // zero: not finished
	ExitCode    int32
	Reason      string
	Message     string
	ImageName   string
	ImageRef    string // repo digest, else the image ID
	ImageID     string
	User        *User // nil: not known
	Seccomp     SeccompProfile
}

// User is a process identity.
type User struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// SeccompProfileType is the kind of seccomp profile a container asked for.
type SeccompProfileType int

// The seccomp profile kinds.
const (
	SeccompUnconfined SeccompProfileType = iota
	SeccompRuntimeDefault
	SeccompLocalhost
)

// SeccompProfile is the seccomp profile a container asked for.
type SeccompProfile struct {
	Type SeccompProfileType
	Path string // SeccompLocalhost: the profile file
}
