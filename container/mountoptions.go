package container

import (
	"fmt"
	"slices"
)

// bindMountOptions are the extra options a CRI mount may ask for
// (Mount.mount_options, KEP-5855): the kubelet allows exactly these three.
// They only restrict the bind (applied by a remount of it, not of the
// mounts under it, as runc and containerd do), so they need no further
// check against the pod.
var bindMountOptions = []string{"noexec", "nodev", "nosuid"}

// checkMountOptions refuses anything else: a request must not reach other
// mount flags (suid, dev, exec, remount, a filesystem option) through it.
func checkMountOptions(m Mount) error {
	for _, o := range m.MountOptions {
		if !slices.Contains(bindMountOptions, o) {
			return fmt.Errorf("%w: mount at %q: mount option %q is not supported (only noexec, nodev, nosuid)",
				ErrInvalid, m.ContainerPath, o)
		}
	}
	return nil
}
