package sandbox

import (
	"fmt"
	"time"

	"github.com/minicri/minicri/internal/fsm"
	"github.com/minicri/minicri/internal/proc"
)

// State is a sandbox's place in its lifecycle:
//
//	creating -> ready -> notready -> removing -> (record deleted)
//	creating -> (rolled back, record deleted)
//
// A record found in creating or removing at start-up belongs to a crashed
// operation and is cleaned up.
type State string

// The sandbox states.
const (
	StateCreating State = "creating"
	StateReady    State = "ready"
	StateNotReady State = "notready"
	StateRemoving State = "removing"
)

var transitions = fsm.Transitions[State]{
	StateCreating: {StateReady},
	StateReady:    {StateNotReady},
	StateNotReady: {StateRemoving},
}

// Status is the mutable part of a sandbox. A Status value is never changed
// once published: updates build a new one, persist it, then swap it in.
type Status struct {
	State     State     `json:"state"`
	IPs       []string  `json:"ips,omitempty"`
	Network   string    `json:"network,omitempty"` // the CNI network used, empty when none
	Monitor   proc.Ref  `json:"monitor,omitzero"`
	Pause     proc.Ref  `json:"pause,omitzero"`
	StoppedAt time.Time `json:"stopped_at,omitzero"`
}

// Record is what is persisted for a sandbox: its identity, its config, where
// its resources live, and its status.
type Record struct {
	ID         string    `json:"id"`
	Config     Config    `json:"config"`
	CreatedAt  time.Time `json:"created_at"`
	NetNSPath  string    `json:"netns_path,omitempty"` // empty for host-network pods
	ShmPath    string    `json:"shm_path,omitempty"`   // empty for host-IPC pods
	CgroupPath string    `json:"cgroup_path"`          // the pause's cgroup
	Status     Status    `json:"status"`
}

func checkTransition(from, to State) error {
	if !transitions.Allows(from, to) {
		return fmt.Errorf("%w: sandbox cannot go from %s to %s", ErrFailedPrecondition, from, to)
	}
	return nil
}
