package ocirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go/features"
)

// ErrUnknownHandler: no runtime handler has this name.
var ErrUnknownHandler = errors.New("unknown runtime handler")

// Handler is one RuntimeClass handler.
type Handler struct {
	Name     string
	Binary   *Binary // nil: the built-in libcontainer runtime
	Features Features
}

// BuiltinFeatures are libcontainer's: "rro" mounts with mount_setattr
// (Linux >= 5.12), pods in their own user namespace with idmapped rootfs
// mounts, and cgroup namespaces.
var BuiltinFeatures = Features{RecursiveReadOnlyMounts: true, UserNamespaces: true, CgroupNamespaces: true}

// Handlers are the runtime handlers of one minicri: "" (the built-in
// runtime) and one per configured binary.
type Handlers struct{ byName map[string]*Handler }

// NewHandlers makes the handlers for the configured binaries (name ->
// binary), asking each for its features.
func NewHandlers(ctx context.Context, bins map[string]*Binary) *Handlers {
	h := &Handlers{byName: map[string]*Handler{"": {Name: "", Features: BuiltinFeatures}}}
	for name, b := range bins {
		h.byName[name] = &Handler{Name: name, Binary: b, Features: ProbeFeatures(ctx, b.Path)}
	}
	return h
}

// Get returns the handler called name.
func (h *Handlers) Get(name string) (*Handler, error) {
	if hd, ok := h.byName[name]; ok {
		return hd, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownHandler, name)
}

// Binary is the binary of handler name (nil for the built-in runtime).
func (h *Handlers) Binary(name string) (*Binary, error) {
	hd, err := h.Get(name)
	if err != nil {
		return nil, err
	}
	return hd.Binary, nil
}

// Check tells whether a pod may use handler name (with its own user
// namespace when userNS is set).
func (h *Handlers) Check(name string, userNS bool) error {
	hd, err := h.Get(name)
	if err != nil {
		return err
	}
	if userNS && !hd.Features.UserNamespaces {
		return fmt.Errorf("runtime handler %q does not support user namespaces", name)
	}
	return nil
}

// List returns every handler, the built-in one first, then by name.
func (h *Handlers) List() []*Handler {
	names := make([]string, 0, len(h.byName))
	for n := range h.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*Handler, 0, len(names))
	for _, n := range names {
		out = append(out, h.byName[n])
	}
	return out
}

// ProbeFeatures asks a runtime binary for its features (`<path>
// features`, runc >= 1.1); a runtime that cannot tell supports none.
func ProbeFeatures(ctx context.Context, path string) Features {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "features").Output() //nolint:gosec // the configured runtime
	if err != nil {
		return Features{}
	}
	var f features.Features
	if err := json.Unmarshal(out, &f); err != nil {
		return Features{}
	}
	var fs Features
	fs.RecursiveReadOnlyMounts = slices.Contains(f.MountOptions, "rro")
	if l := f.Linux; l != nil && l.MountExtensions != nil && l.MountExtensions.IDMap != nil {
		fs.UserNamespaces = l.MountExtensions.IDMap.Enabled != nil && *l.MountExtensions.IDMap.Enabled
	}
	if l := f.Linux; l != nil {
		fs.CgroupNamespaces = slices.Contains(l.Namespaces, "cgroup")
	}
	return fs
}
