package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// privilegeRaisers are adjustments no CRI request can ask for and each of
// which gives a plugin the host: an OCI hook (runs as root on the host), a
// writable bind of the host's root, a device node of host memory, an
// allow-all device cgroup rule, the host's PID namespace, an allow-all
// seccomp policy. hookMarker is the file the hook would create.
func privilegeRaisers(hookMarker string) []struct {
	name, reason string
	adjust       adjuster
} {
	return []struct {
		name, reason string
		adjust       adjuster
	}{
		{"oci-hook", "OCI hook", func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", "touch " + hookMarker}}}})
		}},
		{"host-mount", "host mount", func(a *api.ContainerAdjustment) {
			a.AddMount(&api.Mount{Destination: "/host", Type: "bind", Source: "/", Options: []string{"rbind", "rw"}})
		}},
		{"device-node", "device", func(a *api.ContainerAdjustment) {
			a.AddDevice(&api.LinuxDevice{Path: "/dev/nri-mem", Type: "c", Major: 1, Minor: 1, FileMode: api.FileMode(0o600)})
		}},
		{"device-rule", "device cgroup rule", func(a *api.ContainerAdjustment) {
			a.SetLinuxPidLimits(1000) // creates adj.Linux.Resources
			a.Linux.Resources.Devices = append(a.Linux.Resources.Devices, &api.LinuxDeviceCgroup{Allow: true, Access: "rwm"})
		}},
		{"namespace", "namespace", func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "pid", Path: "/proc/1/ns/pid"})
		}},
		{"seccomp", "seccomp", func(a *api.ContainerAdjustment) {
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"})
		}},
	}
}

// TestNRIValidatorRefusesPrivilegeRaising: with the default configuration,
// a plugin's adjustment that raises privilege fails CreateContainer with
// PermissionDenied naming the plugin and what it tried; nothing of the
// container is left or listed, the hook never ran. An ordinary adjustment
// still applies.
func TestNRIValidatorRefusesPrivilegeRaising(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	p, _ := i.startNRIPlugin(t)
	podID, pod := i.podWithLogs(t, "nri-deny")
	_, podInf := i.status(t, podID)
	marker := filepath.Join(i.dir, "hook-ran")

	for _, tc := range privilegeRaisers(marker) {
		p.adjust.Store(&tc.adjust)
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{
			PodSandboxId: podID, Config: ctrConfig("nri-deny-"+tc.name, "sleep 1000"), SandboxConfig: pod,
		})
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "10-minicri-it") ||
			!strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: CreateContainer = %v, want PermissionDenied naming plugin 10-minicri-it and %q", tc.name, err, tc.reason)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		failed := p.lastID("CreateContainer")
		if ids := i.containersOf(t, podID); len(ids) != 0 {
			t.Errorf("%s: containers listed after a refused adjustment: %v", tc.name, ids)
		}
		i.assertCtrGone(t, failed)
		waitEvents(t, p, failed, "CreateContainer", "StopContainer", "RemoveContainer")
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused OCI hook ran: %v", err)
	}

	env := adjuster(func(a *api.ContainerAdjustment) { a.AddEnv("NRI_INJECTED", "allowed") })
	p.adjust.Store(&env)
	id := i.run(t, podID, pod, ctrConfig("nri-allowed", "sleep 1000"))
	if code, out := i.execIn(t, id, "sh", "-c", `echo "$NRI_INJECTED"`); code != 0 || out != "allowed" {
		t.Errorf("an ordinary adjustment under the default validator: exit %d, %q", code, out)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestNRIValidatorOffAppliesAdjustment: with the default validator off the
// same adjustments are applied (the operator's choice): the hook runs, the
// host's root is writable in the container, the device node is there.
func TestNRIValidatorOffAppliesAdjustment(t *testing.T) {
	i := newInstance(t, withRegistry(), withNRIValidator("enable = false"))
	i.pull(t, busybox)
	p, _ := i.startNRIPlugin(t)
	podID, pod := i.podWithLogs(t, "nri-allow")
	_, podInf := i.status(t, podID)
	marker := filepath.Join(i.dir, "hook-ran")
	var all []adjuster
	for _, tc := range privilegeRaisers(marker) {
		if tc.name == "oci-hook" || tc.name == "host-mount" || tc.name == "device-node" {
			all = append(all, tc.adjust)
		}
	}
	raise := adjuster(func(a *api.ContainerAdjustment) {
		for _, f := range all {
			f(a)
		}
	})
	p.adjust.Store(&raise)
	id := i.run(t, podID, pod, ctrConfig("nri-allow", "sleep 1000"))
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the plugin's OCI hook did not run: %v", err)
	}
	written := filepath.Join(i.dir, "written-through-host-mount")
	if code, out := i.execIn(t, id, "sh", "-c", "touch /host"+written+" && test -c /dev/nri-mem && echo ok"); code != 0 || out != "ok" {
		t.Errorf("adjustments with the validator off: exit %d, %q", code, out)
	}
	if _, err := os.Stat(written); err != nil {
		t.Errorf("the container did not write through the host mount: %v", err)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// vetoPlugin is an external validation plugin: it rejects every
// adjustment of a container named veto.
type vetoPlugin struct {
	veto   string
	synced chan struct{}
}

func (v vetoPlugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	close(v.synced)
	return nil, nil
}

func (v vetoPlugin) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if req.GetContainer().GetName() == v.veto {
		return errors.New("containers named " + v.veto + " are vetoed")
	}
	return nil
}

// TestNRIExternalValidatorRefuses: a validation plugin on the socket takes
// part in every creation: its rejection fails CreateContainer with
// PermissionDenied naming it and its reason, and leaves nothing.
func TestNRIExternalValidatorRefuses(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	p, _ := i.startNRIPlugin(t)
	env := adjuster(func(a *api.ContainerAdjustment) { a.AddEnv("NRI_INJECTED", "allowed") })
	p.adjust.Store(&env)
	veto := vetoPlugin{veto: "nri-vetoed", synced: make(chan struct{})}
	s, err := stub.New(veto, stub.WithPluginName("minicri-veto"), stub.WithPluginIdx("20"), stub.WithSocketPath(i.nriSocket()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	select {
	case <-veto.synced:
		time.Sleep(100 * time.Millisecond) // the adaptation lists it right after its sync returns
	case <-time.After(15 * time.Second):
		t.Fatal("validation plugin not synchronized within 15s")
	}
	podID, pod := i.podWithLogs(t, "nri-veto")
	_, podInf := i.status(t, podID)

	_, err = i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, Config: ctrConfig("nri-vetoed", "sleep 1000"), SandboxConfig: pod,
	})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "20-minicri-veto") ||
		!strings.Contains(err.Error(), "are vetoed") {
		t.Fatalf("CreateContainer vetoed by a validation plugin = %v, want PermissionDenied naming it and its reason", err)
	}
	failed := p.lastID("CreateContainer")
	if ids := i.containersOf(t, podID); len(ids) != 0 {
		t.Errorf("containers listed after a vetoed adjustment: %v", ids)
	}
	i.assertCtrGone(t, failed)
	id := i.run(t, podID, pod, ctrConfig("nri-not-vetoed", "sleep 1000"))
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestNRIValidatorRequiredPlugin: a plugin the validator requires must be
// connected for a container to be created, even while no plugin at all is
// (NRI's fast path must not skip the check).
func TestNRIValidatorRequiredPlugin(t *testing.T) {
	i := newInstance(t, withRegistry(), withNRIValidator(`required_plugins = ["minicri-it"]`))
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "nri-required")
	_, podInf := i.status(t, podID)
	_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, Config: ctrConfig("nri-required", "sleep 1000"), SandboxConfig: pod,
	})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `required plugin "minicri-it" not present`) {
		t.Fatalf("CreateContainer without the required plugin = %v, want PermissionDenied naming it", err)
	}
	if ids := i.containersOf(t, podID); len(ids) != 0 {
		t.Errorf("containers listed after a refused creation: %v", ids)
	}

	p, _ := i.startNRIPlugin(t)
	env := adjuster(func(a *api.ContainerAdjustment) { a.AddEnv("NRI_INJECTED", "allowed") })
	p.adjust.Store(&env)
	id := i.run(t, podID, pod, ctrConfig("nri-required", "sleep 1000"))
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
