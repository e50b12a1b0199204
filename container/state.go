package container

import (
	"fmt"
	"time"

	"github.com/minicri/minicri/internal/fsm"
	"github.com/minicri/minicri/internal/proc"
)

// State is a container's place in its lifecycle:
//
//	creating -> created -> running -> exited -> removing -> (record deleted)
//	created -> exited (killed before it started)
//	creating -> (rolled back)
//
// Records found in creating or removing at start-up belong to a crashed
// operation and are cleaned up.
type State string

// The container states.
const (
	StateCreating State = "creating"
	StateCreated  State = "created"
	StateRunning  State = "running"
	StateExited   State = "exited"
	StateRemoving State = "removing"
)

var transitions = fsm.Transitions[State]{
	StateCreating: {StateCreated},
	StateCreated:  {StateRunning, StateExited, StateRemoving},
	StateRunning:  {StateExited},
	StateExited:   {StateRemoving},
}

func checkTransition(from, to State) error {
	if !transitions.Allows(from, to) {
		return fmt.Errorf("%w: container cannot go from %s to %s", ErrFailedPrecondition, from, to)
	}
	return nil
}

// Exit reasons, as the kubelet expects them.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
	ReasonUnknown   = "Unknown"
)

// Status is the mutable part of a container. A published Status is never
// changed: updates persist a new one, then swap it in.
type Status struct {
	State      State     `json:"state"`
	Init       proc.Ref  `json:"init,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	ExitCode   int32     `json:"exit_code"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	// Resources, once UpdateContainerResources ran, replace Config.Resources.
	Resources *Resources `json:"resources,omitempty"`
}

// User is a process identity: user, primary group, supplemental groups.
type User struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Record is what is persisted for a container.
type Record struct {
	ID        string `json:"id"`
	PodID     string `json:"pod_id"`
	Config    Config `json:"config"`
	ImageID   string `json:"image_id"`
	ImageRef  string `json:"image_ref"`  // repo digest, else the ID
	ImageName string `json:"image_name"` // a repo tag of the image, else the request
	// ImageMounts are the container's image volumes, in the order of its
	// image mounts.
	ImageMounts []ImageMount `json:"image_mounts,omitempty"`
	// User is the identity the container's process runs with.
	User *User `json:"user,omitempty"`
	// ImageStopSignal is the image config's StopSignal.
	ImageStopSignal string    `json:"image_stop_signal,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	LogPath         string    `json:"log_path,omitempty"` // absolute
	CgroupsPath     string    `json:"cgroups_path"`
	// RuntimeHandler is the pod's RuntimeClass handler, whose OCI runtime
	// runs the container ("": the built-in one).
	RuntimeHandler string `json:"runtime_handler,omitempty"`
	Status         Status `json:"status"`
	// Restore is set when the container is made from a checkpoint (restoring.go).
	Restore *Restore `json:"restore,omitempty"`
}
