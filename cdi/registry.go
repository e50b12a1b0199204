package cdi

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// DefaultSpecDirs are where device plugins and DRA drivers write specs:
// static ones, then generated ones (a later directory wins a conflict).
var DefaultSpecDirs = []string{cdi.DefaultStaticDir, cdi.DefaultDynamicDir}

// Registry is the cache of the CDI specs of the configured directories.
// It watches the directories (inotify) and reloads them when a spec file
// is created, written, renamed or removed, or a missing directory appears.
type Registry struct {
	cache *cdi.Cache
	log   *slog.Logger
}

// New loads the specs of dirs and starts watching them. Directories that
// do not exist yet are watched for once they do; specs that fail to load
// are logged and their devices stay unknown.
func New(dirs []string, log *slog.Logger) (*Registry, error) {
	if log == nil {
		log = slog.Default()
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dirs...), cdi.WithAutoRefresh(true))
	if err != nil {
		return nil, fmt.Errorf("CDI cache: %w", err)
	}
	r := &Registry{cache: cache, log: log}
	for path, errs := range cache.GetErrors() {
		log.Warn("CDI spec not loaded", "path", path, "err", errors.Join(errs...))
	}
	log.Info("CDI", "spec_dirs", dirs, "devices", len(cache.ListDevices()))
	return r, nil
}

// Close stops watching the directories.
func (r *Registry) Close() error {
	return r.cache.Configure(cdi.WithAutoRefresh(false))
}

// Inject applies to spec the edits of the named devices (fully qualified
// names, as Requested returns them): first, once per spec file, the edits
// common to its devices, then each device's own; device nodes come with
// a device cgroup rule allowing them. Unknown devices fail with
// ErrUnknownDevice naming all of them; edits that cannot be applied, with
// ErrBadSpec naming the device. spec is left unchanged on error only for
// those two checks: a failed Apply may have half-edited it.
func (r *Registry) Inject(spec *oci.Spec, names []string) error {
	if len(names) == 0 {
		return nil
	}
	devs, err := r.resolve(names)
	if err != nil {
		return err
	}
	edits := &cdi.ContainerEdits{ContainerEdits: &specs.ContainerEdits{}}
	fromSpec := map[*cdi.Spec]bool{}
	for _, d := range devs {
		s := d.GetSpec()
		if !fromSpec[s] {
			fromSpec[s] = true
			if err := checkEdits(&s.ContainerEdits); err != nil {
				return fmt.Errorf("%w %s of %s (device %s): %w", ErrBadSpec, s.GetPath(), s.Kind, d.GetQualifiedName(), err)
			}
			edits.Append(&cdi.ContainerEdits{ContainerEdits: &s.ContainerEdits})
		}
		if err := checkEdits(&d.ContainerEdits); err != nil {
			return fmt.Errorf("%w %s (device %s): %w", ErrBadSpec, s.GetPath(), d.GetQualifiedName(), err)
		}
		edits.Append(&cdi.ContainerEdits{ContainerEdits: &d.ContainerEdits})
	}
	if err := edits.Apply(spec); err != nil {
		return fmt.Errorf("%w: inject CDI devices %s: %w", ErrBadSpec, strings.Join(names, ", "), err)
	}
	bindMovedNodes(spec, edits.DeviceNodes)
	return nil
}

// resolve looks the devices up. A miss rescans the directories once: the
// watch reloads asynchronously, and a spec written just before the
// request (a device plugin answering Allocate) may not be in yet.
func (r *Registry) resolve(names []string) ([]*cdi.Device, error) {
	devs, missing := r.lookup(names)
	if len(missing) > 0 {
		if err := r.cache.Configure(cdi.WithAutoRefresh(true)); err != nil {
			return nil, fmt.Errorf("rescan CDI spec dirs: %w", err)
		}
		devs, missing = r.lookup(names)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w %s (in %s)%s", ErrUnknownDevice, strings.Join(missing, ", "),
			strings.Join(r.cache.GetSpecDirectories(), ", "), r.specErrors())
	}
	return devs, nil
}

func (r *Registry) lookup(names []string) (devs []*cdi.Device, missing []string) {
	for _, n := range names {
		if d := r.cache.GetDevice(n); d != nil {
			devs = append(devs, d)
		} else {
			missing = append(missing, n)
		}
	}
	return devs, missing
}

// specErrors says why spec files were not loaded (at most three), for the
// error of an unknown device: its spec may be one of them.
func (r *Registry) specErrors() string {
	errs := r.cache.GetErrors()
	if len(errs) == 0 {
		return ""
	}
	var parts []string
	for _, path := range slices.Sorted(maps.Keys(errs)) {
		if len(parts) == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %v", path, errors.Join(errs[path]...)))
	}
	return "; specs not loaded: " + strings.Join(parts, "; ")
}

// Devices lists the qualified names of the devices known now.
func (r *Registry) Devices() []string { return r.cache.ListDevices() }
