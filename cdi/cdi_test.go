package cdi

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
)

// writeSpec writes a CDI spec file into dir.
func writeSpec(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed, as spec writers do: the watch never sees
	// half a file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func newRegistry(t *testing.T, dirs ...string) *Registry {
	t.Helper()
	r, err := New(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func baseSpec() *oci.Spec {
	return &oci.Spec{
		Process: &oci.Process{Env: []string{"PATH=/bin", "KEEP=1"}},
		Linux:   &oci.Linux{Resources: &oci.LinuxResources{Devices: []oci.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}},
		Mounts:  []oci.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
	}
}

const gpuSpec = `cdiVersion: "0.6.0"
kind: example.com/gpu
containerEdits:
  env: ["GPU_COMMON=yes"]
devices:
  - name: gpu0
    containerEdits:
      env: ["GPU=0", "KEEP=2"]
      deviceNodes:
        - path: /dev/gpu0
          hostPath: /nonexistent/gpu0
          type: c
          major: 1
          minor: 3
          permissions: rw
      mounts:
        - hostPath: /usr/lib/libgpu.so
          containerPath: /usr/lib/libgpu.so
          options: [ro, nosuid, nodev, bind]
      hooks:
        - hookName: createContainer
          path: /usr/bin/gpu-hook
          args: [gpu-hook, setup]
  - name: gpu1
    containerEdits:
      env: ["GPU=1"]
`

func TestInjectDeviceNodeEnvMountHook(t *testing.T) {
	dir := t.TempDir()
	writeSpec(t, dir, "gpu.yaml", gpuSpec)
	r := newRegistry(t, dir)
	s := baseSpec()
	if err := r.Inject(s, []string{"example.com/gpu=gpu0"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"PATH=/bin", "KEEP=2", "GPU_COMMON=yes", "GPU=0"}; !reflect.DeepEqual(s.Process.Env, want) {
		t.Errorf("env %v, want %v", s.Process.Env, want)
	}
	if len(s.Linux.Devices) != 1 {
		t.Fatalf("devices %+v", s.Linux.Devices)
	}
	if d := s.Linux.Devices[0]; d.Path != "/dev/gpu0" || d.Type != "c" || d.Major != 1 || d.Minor != 3 {
		t.Errorf("device %+v", d)
	}
	rules := s.Linux.Resources.Devices
	if len(rules) != 2 || rules[0].Allow || !rules[1].Allow || rules[1].Type != "c" ||
		*rules[1].Major != 1 || *rules[1].Minor != 3 || rules[1].Access != "rw" {
		t.Errorf("device cgroup rules %+v: want deny-all, then allow c 1:3 rw", rules)
	}
	if !slices.ContainsFunc(s.Mounts, func(m oci.Mount) bool {
		return m.Destination == "/usr/lib/libgpu.so" && m.Source == "/usr/lib/libgpu.so" && slices.Contains(m.Options, "ro")
	}) {
		t.Errorf("mounts %+v lack the library", s.Mounts)
	}
	if s.Hooks == nil || len(s.Hooks.CreateContainer) != 1 || s.Hooks.CreateContainer[0].Path != "/usr/bin/gpu-hook" {
		t.Errorf("hooks %+v", s.Hooks)
	}
}

func TestInjectUnknownDeviceNamesItAndLeavesSpec(t *testing.T) {
	dir := t.TempDir()
	writeSpec(t, dir, "gpu.yaml", gpuSpec)
	r := newRegistry(t, dir)
	s := baseSpec()
	err := r.Inject(s, []string{"example.com/gpu=gpu0", "example.com/gpu=gpu7", "other.org/x=y"})
	if !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("got %v, want ErrUnknownDevice", err)
	}
	for _, n := range []string{"example.com/gpu=gpu7", "other.org/x=y"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
	if !reflect.DeepEqual(s, baseSpec()) {
		t.Errorf("spec edited despite the error: %+v", s)
	}
}

// A spec file written after the registry started is seen: by the watch on
// its own, and by a request at once.
func TestSpecWrittenLaterIsSeen(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run-cdi") // does not exist yet either
	r := newRegistry(t, filepath.Join(root, "etc-cdi"), dir)
	if err := r.Inject(baseSpec(), []string{"example.com/gpu=gpu1"}); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("before the spec: got %v", err)
	}
	writeSpec(t, dir, "gpu.yaml", gpuSpec)
	s := baseSpec()
	if err := r.Inject(s, []string{"example.com/gpu=gpu1"}); err != nil {
		t.Fatalf("right after the spec was written: %v", err)
	}
	if !slices.Contains(s.Process.Env, "GPU=1") {
		t.Errorf("env %v", s.Process.Env)
	}

	// The watch: a second spec appears in the device list with no request.
	writeSpec(t, dir, "nic.json", `{"cdiVersion":"0.6.0","kind":"example.com/nic","devices":[{"name":"n0","containerEdits":{"env":["NIC=0"]}}]}`)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(r.Devices(), "example.com/nic=n0") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not load the new spec: %v", r.Devices())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// And a removed spec's devices go.
	if err := os.Remove(filepath.Join(dir, "nic.json")); err != nil {
		t.Fatal(err)
	}
	for slices.Contains(r.Devices(), "example.com/nic=n0") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not drop the removed spec: %v", r.Devices())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Paths from a spec that could leave the container's root are refused,
// naming the device, and the spec is left alone.
func TestInjectRefusesUnsafePaths(t *testing.T) {
	for name, edits := range map[string]string{
		"dotdot-device":   `deviceNodes: [{path: "/dev/../../../etc/evil", type: c, major: 1, minor: 3}]`,
		"relative-device": `deviceNodes: [{path: "dev/evil", type: c, major: 1, minor: 3}]`,
		"root-device":     `deviceNodes: [{path: "/", type: c, major: 1, minor: 3}]`,
		"dotdot-mount":    `mounts: [{hostPath: /etc, containerPath: "/mnt/../../../host", options: [bind]}]`,
		"root-mount":      `mounts: [{hostPath: /etc, containerPath: "/", options: [bind]}]`,
		"relative-hook":   `hooks: [{hookName: prestart, path: "bin/hook"}]`,
		"relative-host":   `deviceNodes: [{path: "/dev/x", hostPath: "dev/null", type: c, major: 1, minor: 3}]`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeSpec(t, dir, "bad.yaml", "cdiVersion: \"0.6.0\"\nkind: example.com/bad\ndevices:\n  - name: d\n    containerEdits:\n      "+edits+"\n")
			r := newRegistry(t, dir)
			s := baseSpec()
			err := r.Inject(s, []string{"example.com/bad=d"})
			if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "example.com/bad=d") {
				t.Fatalf("got %v, want ErrBadSpec naming the device", err)
			}
			if !reflect.DeepEqual(s, baseSpec()) {
				t.Errorf("spec edited despite the error: %+v", s)
			}
		})
	}
	// The same check guards the edits common to a spec's devices.
	dir := t.TempDir()
	writeSpec(t, dir, "bad.yaml", "cdiVersion: \"0.6.0\"\nkind: example.com/bad\ncontainerEdits:\n  mounts: [{hostPath: /etc, containerPath: \"../x\"}]\ndevices:\n  - name: d\n    containerEdits:\n      env: [A=1]\n")
	if err := newRegistry(t, dir).Inject(baseSpec(), []string{"example.com/bad=d"}); !errors.Is(err, ErrBadSpec) {
		t.Fatalf("spec-wide edits: got %v, want ErrBadSpec", err)
	}
}

func TestRequested(t *testing.T) {
	got, err := Requested([]string{"a.com/x=1", "b.com/y=2", "a.com/x=1"}, map[string]string{
		"cdi.k8s.io/plugin_dev": "c.com/z=3,a.com/x=1",
		"cdi.k8s.io/other":      "b.com/w=4",
		"io.kubernetes.hash":    "not a device",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.com/x=1", "b.com/y=2", "b.com/w=4", "c.com/z=3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, tc := range []struct {
		field []string
		ann   map[string]string
	}{
		{[]string{"gpu0"}, nil},
		{[]string{""}, nil},
		{[]string{"a.com/x=../../y"}, nil},
		{nil, map[string]string{"cdi.k8s.io/x": "not-qualified"}},
		{nil, map[string]string{"cdi.k8s.io/x": "a.com/x=1,"}},
	} {
		if _, err := Requested(tc.field, tc.ann); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Requested(%q, %v): got %v, want ErrInvalidName", tc.field, tc.ann, err)
		}
	}
	if got, err := Requested(nil, nil); err != nil || got != nil {
		t.Errorf("nothing asked: %v %v", got, err)
	}
}

// In a container with its own user namespace, a device node whose host
// path differs from its container path becomes a bind mount of the host
// path (libcontainer would bind the host's node at the container path);
// its device cgroup rule stays.
func TestInjectUserNamespaceBindsMovedNodes(t *testing.T) {
	dir := t.TempDir()
	writeSpec(t, dir, "gpu.yaml", gpuSpec)
	r := newRegistry(t, dir)
	s := baseSpec()
	s.Linux.Namespaces = []oci.LinuxNamespace{{Type: oci.UserNamespace, Path: "/proc/1/ns/user"}}
	if err := r.Inject(s, []string{"example.com/gpu=gpu0"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Linux.Devices) != 0 {
		t.Errorf("devices %+v: the moved node should be a bind mount", s.Linux.Devices)
	}
	if !slices.ContainsFunc(s.Mounts, func(m oci.Mount) bool {
		return m.Destination == "/dev/gpu0" && m.Source == "/nonexistent/gpu0" && m.Type == "bind" && !slices.Contains(m.Options, "nodev")
	}) {
		t.Errorf("mounts %+v lack the bind of the device node", s.Mounts)
	}
	if rules := s.Linux.Resources.Devices; len(rules) != 2 || !rules[1].Allow || *rules[1].Major != 1 || *rules[1].Minor != 3 {
		t.Errorf("device cgroup rules %+v", rules)
	}
}
