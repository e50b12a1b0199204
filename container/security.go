package container

import (
	"fmt"

	"github.com/minicri/minicri/security"
)

// AppArmor is the host's AppArmor as containers see it (apparmor.Host).
type AppArmor = security.AppArmor

// checkAgainstPod refuses what a container asks beyond its pod, as the
// kubelet never would: privileges the pod does not have (containerd: "no
// privileged container allowed in sandbox"), a privileged container in a
// pod user namespace (its host devices, unmasked /proc and /sys and lack of
// seccomp would rest on the user namespace alone), namespaces that do not
// match the pod's (checkNamespaces), a cgroup namespace or cgroupfs mode
// the CRI forbids or this node cannot give (cgroupView), or the PID
// namespace of another pod's container. A TARGET is resolved to its full
// ID here, so that creation joins the very container that was checked.
func (m *Manager) checkAgainstPod(pod PodInfo, sec *Security) error {
	switch {
	case sec.Privileged && !pod.Privileged:
		return fmt.Errorf("%w: no privileged container allowed in pod sandbox %s, which is not privileged", ErrInvalid, pod.ID)
	case sec.Privileged && pod.UserNS != nil:
		return fmt.Errorf("%w: no privileged container allowed in pod sandbox %s, which has its own user namespace", ErrInvalid, pod.ID)
	}
	if err := checkNamespaces(pod, sec); err != nil {
		return err
	}
	if _, err := cgroupView(sec); err != nil {
		return err
	}
	if sec.PID != ModeTarget {
		return nil
	}
	if sec.TargetID == "" {
		return fmt.Errorf("%w: PID namespace mode TARGET needs a target_id", ErrInvalid)
	}
	t, err := m.store.get(sec.TargetID)
	if err != nil {
		return fmt.Errorf("%w: target container %s: %v", ErrNotFound, sec.TargetID, err)
	}
	if t.rec.PodID != pod.ID {
		return fmt.Errorf("%w: target container %s is not in pod sandbox %s", ErrInvalid, sec.TargetID, pod.ID)
	}
	sec.TargetID = t.ID()
	return nil
}
