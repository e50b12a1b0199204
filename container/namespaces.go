package container

import (
	"fmt"
	"slices"
)

// checkNamespaces refuses namespace options a container cannot have in its
// pod. containerd joins the pod's network, IPC and user namespaces whatever
// the container asks (the kubelet sends the pod's options); minicri joins
// them too, but refuses what it would otherwise silently not do:
//
//   - network or IPC: POD, or NODE where the pod itself uses the host's;
//     CONTAINER and TARGET are not defined for them;
//   - PID: NODE only where the pod uses the host's (POD, CONTAINER and
//     TARGET are honoured, TARGET checked by the caller);
//   - userns_options: none (the pod's), NODE where the pod has no user
//     namespace of its own, POD where it has one, with the pod's mappings
//     if any are given; CONTAINER and TARGET are not defined for it.
func checkNamespaces(pod PodInfo, sec *Security) error {
	hostNet := pod.NetNSPath == ""
	if err := checkShared("network", sec.Network, hostNet, pod.ID); err != nil {
		return err
	}
	if err := checkShared("IPC", sec.IPC, pod.HostIPC, pod.ID); err != nil {
		return err
	}
	switch sec.PID {
	case ModePod, ModeContainer, ModeTarget:
	case ModeNode:
		if !pod.HostPID {
			return fmt.Errorf("%w: the container asks for the host's PID namespace, but pod sandbox %s has its own", ErrInvalid, pod.ID)
		}
	default:
		return fmt.Errorf("%w: unknown PID namespace mode %d", ErrInvalid, sec.PID)
	}
	return checkUserNS(pod, sec.UserNS)
}

// checkShared checks the mode of a namespace the container can only share
// with its pod.
func checkShared(kind string, mode NamespaceMode, podOnHost bool, podID string) error {
	switch mode {
	case ModePod:
		return nil
	case ModeNode:
		if podOnHost {
			return nil
		}
		return fmt.Errorf("%w: the container asks for the host's %s namespace, but pod sandbox %s has its own", ErrInvalid, kind, podID)
	case ModeContainer, ModeTarget:
		return fmt.Errorf("%w: a container shares its pod's %s namespace: mode %s is not supported", ErrInvalid, kind, modeName(mode))
	}
	return fmt.Errorf("%w: unknown %s namespace mode %d", ErrInvalid, kind, mode)
}

// checkUserNS checks a container's userns_options against its pod's user
// namespace.
func checkUserNS(pod PodInfo, u *UserNSOption) error {
	if u == nil {
		return nil
	}
	switch u.Mode {
	case ModeNode:
		if pod.UserNS != nil {
			return fmt.Errorf("%w: the container asks for the host's user namespace, but pod sandbox %s has its own", ErrInvalid, pod.ID)
		}
		return nil
	case ModePod:
		if pod.UserNS == nil {
			return fmt.Errorf("%w: the container asks for its pod's user namespace, but pod sandbox %s has none of its own", ErrInvalid, pod.ID)
		}
		if (len(u.UIDs) > 0 && !slices.Equal(u.UIDs, pod.UserNS.UIDs)) || (len(u.GIDs) > 0 && !slices.Equal(u.GIDs, pod.UserNS.GIDs)) {
			return fmt.Errorf("%w: the container's user namespace mappings differ from those of pod sandbox %s", ErrInvalid, pod.ID)
		}
		return nil
	case ModeContainer, ModeTarget:
		return fmt.Errorf("%w: a container shares its pod's user namespace: mode %s is not supported", ErrInvalid, modeName(u.Mode))
	}
	return fmt.Errorf("%w: unknown user namespace mode %d", ErrInvalid, u.Mode)
}

func modeName(m NamespaceMode) string {
	switch m {
	case ModePod:
		return "POD"
	case ModeContainer:
		return "CONTAINER"
	case ModeNode:
		return "NODE"
	case ModeTarget:
		return "TARGET"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}
