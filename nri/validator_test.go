package nri

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// safeValidator is the default configuration's validator.
func safeValidator() ValidatorOptions {
	return ValidatorOptions{
		DefaultValidatorConfig: validator.DefaultValidatorConfig{
			Enable: true, RejectOCIHookAdjustment: true, RejectRuntimeDefaultSeccompAdjustment: true,
			RejectUnconfinedSeccompAdjustment: true, RejectCustomSeccompAdjustment: true,
			RejectNamespaceAdjustment: true, RejectSysctlAdjustment: true,
		},
		RejectHostMounts: true, RejectDevices: true,
	}
}

// startWith starts NRI with the validator v and, when adjust is set, a
// built-in plugin "10-adjuster" making that adjustment of every container.
func startWith(t *testing.T, v ValidatorOptions, adjust func(*api.ContainerAdjustment)) *NRI {
	t.Helper()
	dir := t.TempDir()
	opts := Options{
		SocketPath: filepath.Join(dir, "nri.sock"), PluginPath: filepath.Join(dir, "plugins"), PluginConfigPath: filepath.Join(dir, "conf.d"),
		RegistrationTimeout: time.Second, RequestTimeout: time.Second, Validator: v,
	}
	if adjust != nil {
		opts.builtins = []*builtin.BuiltinPlugin{{Base: "adjuster", Index: "10", Handlers: builtin.BuiltinHandlers{
			CreateContainer: func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
				adj := &api.ContainerAdjustment{}
				adjust(adj)
				return &api.CreateContainerResponse{Adjust: adj}, nil
			},
		}}}
	}
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(fakePods{}, &fakeContainers{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

func create(n *NRI) error {
	release, err := n.CreateContainer(context.Background(), hook.Container{ID: "c", PodID: "p"}, baseSpec())
	release()
	return err
}

// The built-in validator refuses each kind of privilege-raising adjustment
// with hook.ErrPermissionDenied, naming the plugin and what it did
// (this pins the nri library's wording of a rejection, isRefusal); an
// ordinary adjustment passes; with the validator off all of them pass.
func TestValidatorRefusesPrivilegeRaising(t *testing.T) {
	for name, tc := range map[string]struct {
		adjust func(*api.ContainerAdjustment)
		reason string
	}{
		"hook": {func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/true"}}})
		}, "OCI hook"},
		"bind": {func(a *api.ContainerAdjustment) {
			a.AddMount(&api.Mount{Destination: "/host", Type: "bind", Source: "/", Options: []string{"rbind"}})
		}, `host mount adjustment (bind "/" on "/host")`},
		"sysfs": {func(a *api.ContainerAdjustment) {
			a.AddMount(&api.Mount{Destination: "/sys2", Type: "sysfs", Source: "sysfs"})
		}, "host mount"},
		"device": {func(a *api.ContainerAdjustment) {
			a.AddDevice(&api.LinuxDevice{Path: "/dev/mem", Type: "c", Major: 1, Minor: 1})
		}, "device adjustment (/dev/mem c 1:1)"},
		"device rule": {func(a *api.ContainerAdjustment) {
			a.SetLinuxPidLimits(10)
			a.Linux.Resources.Devices = []*api.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
		}, `one of plugins ["10-adjuster"] attempted restricted device cgroup rule adjustment (allow a 0:0 rwm)`},
		"net device": {func(a *api.ContainerAdjustment) {
			a.AddLinuxNetDevice("eth0", &api.LinuxNetDevice{Name: "eth9"})
		}, "host network device eth0"},
		"namespace": {func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "pid", Path: "/proc/1/ns/pid"})
		}, "namespace"},
		"seccomp": {func(a *api.ContainerAdjustment) {
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"})
		}, "seccomp"},
		"sysctl": {func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("net.ipv4.ip_forward", "1") }, "sysctl"},
	} {
		err := create(startWith(t, safeValidator(), tc.adjust))
		if !errors.Is(err, hook.ErrPermissionDenied) || !strings.Contains(err.Error(), `validator "00-default-validator"`) ||
			!strings.Contains(err.Error(), "10-adjuster") || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want a refusal naming the validator, 10-adjuster and %q", name, err, tc.reason)
		}
		if err := create(startWith(t, ValidatorOptions{}, tc.adjust)); err != nil {
			t.Errorf("%s with the validator off: %v", name, err)
		}
	}
	ok := func(a *api.ContainerAdjustment) {
		a.AddEnv("A", "1")
		a.AddMount(&api.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs"})
		a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/dev=x"})
		a.SetLinuxMemoryLimit(1 << 20)
	}
	if err := create(startWith(t, safeValidator(), ok)); err != nil {
		t.Errorf("an ordinary adjustment: %v", err)
	}
}

// The built-in validator is no plugin: with it alone NRI stays inert (and
// costs nothing), unless it requires plugins; then creations are refused
// until they connect.
func TestValidatorAloneIsInert(t *testing.T) {
	n := startWith(t, safeValidator(), nil)
	if n.Active() {
		t.Fatal("active with only the built-in validator")
	}
	if err := create(n); err != nil {
		t.Fatal(err)
	}
	v := safeValidator()
	v.RequiredPlugins = []string{"needed"}
	err := create(startWith(t, v, nil))
	if !errors.Is(err, hook.ErrPermissionDenied) || !strings.Contains(err.Error(), `required plugin "needed" not present`) {
		t.Fatalf("a required plugin missing: %v", err)
	}
}

type annotatedPods struct{ fakePods }

func (annotatedPods) Pod(string) (hook.Pod, error) {
	return hook.Pod{Annotations: map[string]string{"required-plugins.noderesource.dev/container.x": `["needed"]`}}, nil
}

// A pod's annotation naming required plugins makes its creations validated.
func TestRequiredPluginsAnnotation(t *testing.T) {
	n := &NRI{validates: true, pods: annotatedPods{}}
	if !n.mustValidate("p") {
		t.Fatal("a pod requiring plugins by annotation is not validated")
	}
	if n.validates = false; n.mustValidate("p") {
		t.Fatal("validated with the validator off")
	}
}

// With devices refused, a plugin's update may not allow devices either.
func TestUpdateAllowingDevicesRefused(t *testing.T) {
	f := &fakeContainers{res: map[string]*specs.LinuxResources{"a": {}}}
	n := &NRI{ctrs: f, log: slog.Default(), rejectDevices: true}
	u := &api.ContainerUpdate{ContainerId: "a", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
		Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "rw"}},
	}}}
	if _, err := n.updateContainers(context.Background(), []*api.ContainerUpdate{u}); !errors.Is(err, hook.ErrPermissionDenied) {
		t.Fatalf("an update allowing devices: %v", err)
	}
	if len(f.res["a"].Devices) != 0 {
		t.Fatalf("refused update applied: %+v", f.res["a"].Devices)
	}
	n.rejectDevices = false
	if _, err := n.updateContainers(context.Background(), []*api.ContainerUpdate{u}); err != nil || len(f.res["a"].Devices) != 1 {
		t.Fatalf("with devices allowed: %v, %+v", err, f.res["a"].Devices)
	}
}
