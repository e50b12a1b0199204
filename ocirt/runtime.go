package ocirt

import (
	"errors"
	"os"
	"syscall"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Errors a runtime reports.
var (
	// ErrNotRunning: the container has no process left to signal.
	ErrNotRunning = errors.New("container not running")
	// ErrNotExist: the runtime has no state for the container.
	ErrNotExist = errors.New("container does not exist")
	// ErrUnsupported: the runtime cannot do this (checkpoint with an
	// external binary, say).
	ErrUnsupported = errors.New("not supported by this runtime")
)

// Runtime creates and loads containers. Create is the monitor's; Load is
// for everything else.
type Runtime interface {
	// Create makes the container of the bundle (whose config.json is spec)
	// and starts its init, which waits for Start. The caller holds off its
	// orphan reaper until it has tracked the returned container's PID.
	Create(id, bundle string, spec *specs.Spec, io Stdio) (Container, error)
	// Load finds a container created earlier (by any process); cgroupsPath
	// is the container's spec.linux.cgroupsPath.
	Load(id, cgroupsPath string) (Handle, error)
}

// Stdio is a new container's stdio: its ends of pipes (the caller closes
// them after Create), or a terminal whose master Create returns.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File // nil: /dev/null (Stdin) or none
	TTY                   bool
}

// Container is a container created by Create, in the process that is its
// init's parent (or subreaper).
type Container interface {
	Handle
	PID() int
	// Console is the PTY master of a TTY container (nil otherwise).
	Console() *os.File
	// Wait reaps the init.
	Wait() (*os.ProcessState, error)
	// Start lets the created init exec the user's process.
	Start() error
	// NotifyOOM reports OOM kills while the container runs (systemd
	// cgroups, whose cgroup goes with its last process).
	NotifyOOM() (<-chan struct{}, error)
}

// Handle drives an existing container.
type Handle interface {
	// Signal sends sig to the init or, with all, to every process of the
	// container's cgroup (which works after the init exited).
	Signal(sig syscall.Signal, all bool) error
	// Delete kills what is left and removes the container's runtime state
	// and cgroup. A missing container is no error.
	Delete() error
	// Exec starts a process in the running container.
	Exec(e ExecSpec) (Process, error)
	// Update sets the container's cgroup resources (spec is the container's
	// spec with the new spec.linux.resources).
	Update(spec *specs.Spec) error
	// Stats reads the container's cgroup.
	Stats() (*cgroups.Stats, error)
	// CgroupPaths are the container's cgroup directories by controller.
	CgroupPaths() (map[string]string, error)
	// Processes are the PIDs in the container's cgroup.
	Processes() ([]int, error)
}

// ExecSpec describes an exec.
type ExecSpec struct {
	Process *specs.Process // the container's process with the exec's args (Terminal: a TTY)
	// Without a terminal: the process's ends of its stdio pipes (nil: none).
	Stdin, Stdout, Stderr *os.File
}

// Process is an exec'd process.
type Process interface {
	// Console is the exec's PTY master (Terminal only).
	Console() (*os.File, error)
	// Kill kills the process; Wait still reaps it.
	Kill() error
	// Wait waits for the process and reports its status (a signalled
	// process may be reported as exit 128+signal).
	Wait() (*os.ProcessState, error)
}

// Features are what a runtime handler supports, for the CRI's Status.
type Features struct {
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool
	// CgroupNamespaces: the runtime makes a cgroup namespace when the spec
	// asks (the host must be cgroup v2 too for minicri to advertise it).
	CgroupNamespaces bool
}
