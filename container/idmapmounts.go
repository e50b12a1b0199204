package container

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/idmap"
)

// idmapOption asks libcontainer for an idmapped bind through the user
// namespace the container joins (the pause's): no helper process.
const idmapOption = "idmap"

// checkMountIDMaps refuses ID mappings on a mount that cannot be honoured:
// only one of the two lists (an idmapped mount maps both), a pod without a
// user namespace of its own (KEP-127 defines them for such pods only), or
// mappings the kernel would refuse (empty, overlapping, past the highest
// ID) or that map host root.
func checkMountIDMaps(mounts []Mount, pod *PodInfo) error {
	for _, m := range mounts {
		if len(m.UIDMappings) == 0 && len(m.GIDMappings) == 0 {
			continue
		}
		switch {
		case len(m.UIDMappings) == 0 || len(m.GIDMappings) == 0:
			return fmt.Errorf("%w: mount at %q: an idmapped mount needs both UID and GID mappings", ErrInvalid, m.ContainerPath)
		case pod.UserNS == nil:
			return fmt.Errorf("%w: mount at %q: ID mappings need a pod with its own user namespace, and pod sandbox %s has none", ErrInvalid, m.ContainerPath, pod.ID)
		}
		for kind, ms := range map[string][]IDMapping{"UID": m.UIDMappings, "GID": m.GIDMappings} {
			if err := idmap.Check(ms); err != nil {
				return fmt.Errorf("%w: mount at %q: %s mappings: %v", ErrInvalid, m.ContainerPath, kind, err)
			}
		}
	}
	return nil
}

// withIDMapping makes the bind sm of m idmapped, as containerd hands the
// mappings to runc. The kubelet gives every mount of a user namespace pod
// the pod's own mappings: the bind is then idmapped through the pause's
// user namespace, which libcontainer opens by path; other mappings are
// given explicitly (libcontainer then makes a user namespace for them).
// The mapping is not recursive (runc's "idmap"), as with containerd.
func withIDMapping(sm *specs.Mount, m Mount, pod *PodInfo) {
	if len(m.UIDMappings) == 0 || pod.UserNS == nil {
		return
	}
	if slices.Equal(m.UIDMappings, pod.UserNS.UIDs) && slices.Equal(m.GIDMappings, pod.UserNS.GIDs) {
		sm.Options = append(sm.Options, idmapOption)
		return
	}
	sm.UIDMappings, sm.GIDMappings = specIDMappings(m.UIDMappings), specIDMappings(m.GIDMappings)
}
