package cdi

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

// checkEdits refuses edits whose paths could leave the container's root or
// that no runtime can run: device nodes and mount destinations must be
// absolute, not "/" and without ".." elements (libcontainer resolves them
// inside the rootfs anyway; this is the second wall), host paths and hook
// binaries absolute.
func checkEdits(e *specs.ContainerEdits) error {
	if e == nil {
		return nil
	}
	for _, d := range e.DeviceNodes {
		if d == nil {
			continue
		}
		if err := containerPath("device node", d.Path); err != nil {
			return err
		}
		if d.HostPath != "" && !filepath.IsAbs(d.HostPath) {
			return fmt.Errorf("device node %q: host path %q is not absolute", d.Path, d.HostPath)
		}
	}
	for _, m := range e.Mounts {
		if m == nil {
			continue
		}
		if err := containerPath("mount", m.ContainerPath); err != nil {
			return err
		}
	}
	for _, h := range e.Hooks {
		if h != nil && !filepath.IsAbs(h.Path) {
			return fmt.Errorf("%s hook %q: path is not absolute", h.HookName, h.Path)
		}
	}
	return nil
}

// containerPath checks a path inside the container.
func containerPath(what, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) == "/" || slices.Contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("%s path %q must be absolute, below / and without \"..\"", what, p)
	}
	return nil
}
