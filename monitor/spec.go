package monitor

import (
	"path/filepath"

	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/internal/proc"
)

// Spec is what the daemon asks a new monitor to do. It is written to
// spec.json in the monitor's directory.
type Spec struct {
	PodID string `json:"pod_id"`
	Dir   string `json:"dir"` // the pod's state directory: socket, status, log
	Pause Pause  `json:"pause"`
}

// Pause describes the pod's pause process and the namespaces it holds.
type Pause struct {
	Path        string   `json:"path"`
	Hostname    string   `json:"hostname,omitempty"` // set in a new UTS namespace
	Sysctls     []string `json:"sysctls,omitempty"`  // path=value (path relative to /proc/sys), applied inside the pod's namespaces
	NetNSPath   string   `json:"netns,omitempty"`    // empty: the host's network
	NewIPC      bool     `json:"new_ipc"`
	NewUTS      bool     `json:"new_uts"`
	NewPID      bool     `json:"new_pid"`
	CgroupPath  string   `json:"cgroup_path,omitempty"`
	OOMScoreAdj int      `json:"oom_score_adj"`
	// UserNS, when set, gives the pause a new user namespace with these
	// mappings, and a new network namespace owned by it (NetNSPath is then
	// empty: the daemon pins the pause's netns afterwards).
	UserNS *idmap.Mappings `json:"userns,omitempty"`
	// RunAsUser and RunAsGroup, when set, are the pause's UID and GID
	// (default: the pause image's 65535, where mapped); Groups are its
	// supplementary groups (default: none).
	RunAsUser  *int64  `json:"run_as_user,omitempty"`
	RunAsGroup *int64  `json:"run_as_group,omitempty"`
	Groups     []int64 `json:"groups,omitempty"`
}

// State is what the monitor records in state.json as soon as it knows it,
// so that cleanup after a crash can find its processes.
type State struct {
	Monitor proc.Ref `json:"monitor"`
	Pause   proc.Ref `json:"pause,omitzero"`
}

// Paths of the monitor's files inside its directory.
func SocketPath(dir string) string { return filepath.Join(dir, "monitor.sock") }
func StatePath(dir string) string  { return filepath.Join(dir, "monitor.json") }
func specPath(dir string) string   { return filepath.Join(dir, "spec.json") }
func logPath(dir string) string    { return filepath.Join(dir, "monitor.log") }
