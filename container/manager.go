package container

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/internal/idindex"
	"github.com/minicri/minicri/stats"
)

// Images is the part of the image store containers use: an image is pinned
// while a container uses its layers. Leases are held by a holder ID (the
// container's ID for its rootfs, imageVolumesHolder for its image
// volumes); both calls are idempotent per holder.
type Images interface {
	Acquire(ref, holder string) (image.Image, error)
	Release(holder string) error
}

// Pods tells containers about their pod sandbox.
type Pods interface {
	Pod(id string) (PodInfo, error)
}

// Options configure a Manager.
type Options struct {
	Root     string // persistent: records, upper dirs
	State    string // volatile: rootfs mounts, bundles, libcontainer state
	Images   Images
	Pods     Pods
	HostCaps []string
	AppArmor AppArmor // nil: the host has none
	Log      *slog.Logger
	Events   *events.Broker // lifecycle events; nil: nobody listens
	// CDI resolves CDI devices into spec edits; nil: CDI is disabled. The
	// manager closes it.
	CDI      CDI
	Runtimes Runtimes // RuntimeClass handlers; nil: only the built-in ""
	Hooks    Hooks    // NRI; nil: none
	// Restorer makes containers from checkpoints (restoring.go); nil: no
	// image is a checkpoint.
	Restorer Restorer
	// OCIProfiles finds pulled seccomp profiles (seccomp_oci.go); nil:
	// none is present.
	OCIProfiles OCIProfiles
}

// Manager owns every container of one minicri instance.
type Manager struct {
	opts   Options
	log    *slog.Logger
	store  *store
	names  *names
	rates  *stats.Rates
	events *events.Broker
	done   chan struct{} // closed by Close
	// metrics caches the CRI metrics samples and the writable layers'
	// usage (see metrics.go).
	metrics *stats.Cache
}

// New creates the manager and recovers the containers a previous run left.
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
	m := &Manager{opts: opts, log: opts.Log, store: newStore(), names: newNames(), rates: stats.NewRates(),
		events: opts.Events, done: make(chan struct{}),
		metrics: stats.NewCache()}
	if err := m.ensureDirs(); err != nil {
		return nil, err
	}
	if err := m.recover(ctx); err != nil {
		return nil, fmt.Errorf("recover containers: %w", err)
	}
	go m.watchExits()
	return m, nil
}

// Close stops the manager's background work.
func (m *Manager) Close() {
	close(m.done)
	if m.opts.CDI != nil {
		if err := m.opts.CDI.Close(); err != nil {
			m.log.Warn("close CDI registry", "err", err)
		}
	}
}

func (m *Manager) recordsDir() string           { return filepath.Join(m.opts.Root, "containers") }
func (m *Manager) stateDir() string             { return filepath.Join(m.opts.State, "containers") }
func (m *Manager) runcRoot() string             { return filepath.Join(m.opts.State, "runc") }
func (m *Manager) rootDir(id string) string     { return filepath.Join(m.recordsDir(), id) }
func (m *Manager) ctrStateDir(id string) string { return filepath.Join(m.stateDir(), id) }
func (m *Manager) recordPath(id string) string {
	return filepath.Join(m.rootDir(id), recordFile)
}
func (m *Manager) rootfsPath(id string) string { return filepath.Join(m.ctrStateDir(id), "rootfs") }

// RuncRoot is libcontainer's state root, for callers that exec into
// containers.
func (m *Manager) RuncRoot() string { return m.runcRoot() }

// Get returns a container by ID or unique prefix, with its exit (if any)
// taken into account.
func (m *Manager) Get(id string) (Info, error) {
	c, err := m.store.get(id)
	if err != nil {
		return Info{}, err
	}
	return m.info(c), nil
}

// Filter selects containers in List; empty fields match everything.
type Filter struct {
	ID            string
	PodID         string
	State         *State
	LabelSelector map[string]string
}

// List returns the containers that match f, oldest first.
func (m *Manager) List(f Filter) []Info {
	var out []Info
	for _, c := range m.store.all("") {
		if f.ID != "" && !strings.HasPrefix(c.rec.ID, f.ID) {
			continue
		}
		if f.PodID != "" && !strings.HasPrefix(c.rec.PodID, f.PodID) {
			continue
		}
		info := m.info(c)
		if f.State != nil && info.Status.State != *f.State {
			continue
		}
		if !idindex.LabelsMatch(info.Config.Labels, f.LabelSelector) {
			continue
		}
		out = append(out, info)
	}
	return out
}

// recordFile is the name of the record in each object's root directory.
const recordFile = "container.json"
