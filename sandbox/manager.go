package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/internal/idindex"
	"github.com/minicri/minicri/internal/mounts"
	"github.com/minicri/minicri/network"
)

// Network is the part of the network manager sandboxes use.
type Network interface {
	Setup(ctx context.Context, pod network.Pod) (network.Result, error)
	Teardown(ctx context.Context, pod network.Pod) error
	// NetNSNeededForTeardown is false when DEL works as well (and faster)
	// after the pod's netns is gone.
	NetNSNeededForTeardown(podID string) bool
}

// Containers is what a sandbox asks of its containers when it stops or goes.
type Containers interface {
	StopPod(ctx context.Context, podID string) error
	RemovePod(ctx context.Context, podID string) error
}

// Options configure a Manager.
type Options struct {
	Root         string // persistent: records and pod files
	State        string // volatile: netns pins, shm, monitors
	Exe          string // minicri's own binary, re-executed as the monitor
	PausePath    string
	CgroupParent string          // for pods that name none (normalised by CgroupDriver)
	CgroupDriver cgdriver.Driver // names the cgroups of new pods
	Network      Network
	Containers   Containers
	Log          *slog.Logger
	Events       *events.Broker // lifecycle events; nil: nobody listens
	Handlers     Handlers       // RuntimeClass handlers; nil: only the built-in ""
	Hooks        Hooks          // NRI; nil: none
	OCIProfiles  OCIProfiles    // pulled seccomp profiles; nil: none is present
}

// Manager owns every sandbox of one minicri instance.
type Manager struct {
	opts     Options
	log      *slog.Logger
	store    *store
	inflight *inflight
}

// New creates the manager and recovers the sandboxes a previous run left:
// ready and not-ready pods are listed again untouched, half-created or
// half-removed ones are cleaned up.
func New(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = events.NewBroker()
	}
	if opts.Hooks == nil {
		opts.Hooks = noHooks{}
	}
	m := &Manager{opts: opts, log: opts.Log, store: newStore(), inflight: newInflight()}
	// A pod's directories hold the files its containers bind and may write
	// (hosts, resolv.conf, the /dev/shm tmpfs): only root may enter them.
	// Containers of a pod with its own user namespace get these bind
	// sources from libcontainer as descriptors, not by path.
	for _, d := range []string{m.recordsDir(), m.stateDir()} {
		if err := hostdir.Ensure(d, hostdir.Private); err != nil {
			return nil, err
		}
		if err := hostdir.Tighten(d, hostdir.Private); err != nil {
			return nil, fmt.Errorf("close pod directories: %w", err)
		}
	}
	// Search-only, like <state>: netns pins are opened by their full path
	// (runc, CNI plugins); nobody but root may list them.
	if err := os.MkdirAll(m.netnsDir(), 0o711); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("create %s: %w", m.netnsDir(), err)
	}
	if err := m.recover(ctx); err != nil {
		return nil, fmt.Errorf("recover sandboxes: %w", err)
	}
	return m, nil
}

func (m *Manager) recordsDir() string          { return filepath.Join(m.opts.Root, "sandboxes") }
func (m *Manager) stateDir() string            { return filepath.Join(m.opts.State, "sandboxes") }
func (m *Manager) netnsDir() string            { return filepath.Join(m.opts.State, "netns") }
func (m *Manager) podRootDir(id string) string { return filepath.Join(m.recordsDir(), id) }
func (m *Manager) podStateDir(id string) string {
	return filepath.Join(m.stateDir(), id)
}
func (m *Manager) recordPath(id string) string {
	return filepath.Join(m.podRootDir(id), recordFile)
}

// Get returns a sandbox by ID or unique ID prefix.
func (m *Manager) Get(id string) (Info, error) {
	sb, err := m.store.get(id)
	if err != nil {
		return Info{}, err
	}
	return sb.Info(), nil
}

// Filter selects sandboxes in List; empty fields match everything.
type Filter struct {
	ID            string // full ID or prefix
	State         *State
	LabelSelector map[string]string
}

// List returns the sandboxes that match f, oldest first.
func (m *Manager) List(f Filter) []Info {
	var out []Info
	for _, sb := range m.store.all() {
		info := sb.Info()
		if f.matches(info) {
			out = append(out, info)
		}
	}
	return out
}

func (f Filter) matches(info Info) bool {
	if f.ID != "" && !strings.HasPrefix(info.ID, f.ID) {
		return false
	}
	if f.State != nil && info.Status.State != *f.State {
		return false
	}
	return idindex.LabelsMatch(info.Config.Labels, f.LabelSelector)
}

// MonitorDir is the directory of the pod's monitor (its socket and state).
func (m *Manager) MonitorDir(id string) string { return m.podStateDir(id) }

// PodFile returns the path of one of the pod's files (HostnameFile...).
func (m *Manager) PodFile(id, name string) string { return filepath.Join(m.podRootDir(id), name) }

// Close releases instance-wide state when no pod is left: the shared mount
// of the netns dir and the default cgroup parent. Pods that remain keep both.
func (m *Manager) Close() error {
	if m.store.len() > 0 {
		return nil
	}
	if err := mounts.UnmountAll(m.netnsDir()); err != nil {
		return err
	}
	if m.opts.CgroupDriver != cgdriver.Systemd {
		removeEmptyCgroup(m.opts.CgroupParent)
	}
	return nil
}

// emit publishes a sandbox lifecycle event (the CRI reports sandboxes in
// GetContainerEvents under their own ID, as containerd does).
func (m *Manager) emit(kind events.Kind, id string) {
	m.opts.Events.Publish(events.Event{Kind: kind, ID: id, PodID: id})
}

// recordFile is the name of the record in each object's root directory.
const recordFile = "sandbox.json"
