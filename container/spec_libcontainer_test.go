package container

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/configs/validate"
	"github.com/opencontainers/runc/libcontainer/specconv"

	"github.com/minicri/minicri/security"
)

// TestSpecConvertsForLibcontainer proves that what BuildSpec produces is
// accepted by runc's libcontainer: specconv converts it and the config
// passes libcontainer's own validation (the checks libcontainer.Create
// runs), for a default, a busy and a privileged container, on this host.
func TestSpecConvertsForLibcontainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	hostCaps, err := security.HostCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()

	base := func(t *testing.T) SpecInput {
		in := testInput(t)
		// Namespace paths libcontainer's validation can stat.
		in.Pod.PausePID = self
		in.Pod.NetNSPath = "/proc/self/ns/net"
		in.HostCaps = hostCaps
		in.Config.Resources = Resources{CPUShares: 256, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, OOMScoreAdj: 100}
		return in
	}

	tests := []struct {
		name string
		mod  func(t *testing.T, in *SpecInput)
	}{
		{"default", func(*testing.T, *SpecInput) {}},
		{"busy", func(t *testing.T, in *SpecInput) {
			sec := &in.Config.Security
			sec.RunAsUser = i64(1000)
			sec.SupplementalGroups = []int64{1234}
			sec.CapAdd = []string{"NET_ADMIN", "SYS_ADMIN"}
			sec.CapDrop = []string{"MKNOD"}
			sec.AmbientAdd = []string{"NET_BIND_SERVICE"}
			sec.ReadonlyRootfs = true
			sec.NoNewPrivs = true
			sec.PID = ModeContainer
			in.Config.TTY = true
			in.Config.Mounts = []Mount{
				{ContainerPath: "/data", HostPath: t.TempDir(), Readonly: true, RecursiveReadOnly: true},
				{ContainerPath: "/scratch", HostPath: filepath.Join(t.TempDir(), "new")},
			}
			in.Config.Devices = []Device{{HostPath: "/dev/zero", ContainerPath: "/dev/zero2", Permissions: "rw"}}
			in.Pod.HostIPC = true
		}},
		{"privileged", func(t *testing.T, in *SpecInput) {
			in.Config.Security.Privileged = true
			in.Config.Security.PID = ModeNode
			in.Pod.NetNSPath = ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base(t)
			tt.mod(t, &in)
			spec, err := BuildSpec(in)
			if err != nil {
				t.Fatalf("BuildSpec: %v", err)
			}
			cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
				CgroupName:  in.ID,
				Spec:        spec,
				NoPivotRoot: false,
			})
			if err != nil {
				t.Fatalf("CreateLibcontainerConfig: %v", err)
			}
			if err := validate.Validate(cfg); err != nil {
				t.Fatalf("libcontainer validation: %v", err)
			}
			if cfg.Cgroups.Path != in.CgroupsPath {
				t.Fatalf("cgroup path = %q", cfg.Cgroups.Path)
			}
			if !cfg.Namespaces.Contains(configs.NEWNS) {
				t.Fatal("no mount namespace")
			}
			if in.Config.Security.Privileged {
				if cfg.Seccomp != nil || len(cfg.MaskPaths) != 0 || !slices.Equal(cfg.Capabilities.Bounding, hostCaps) {
					t.Fatalf("privileged config: seccomp %v, masked %v, caps %v", cfg.Seccomp != nil, cfg.MaskPaths, cfg.Capabilities.Bounding)
				}
				if len(cfg.Devices) < 10 {
					t.Fatalf("privileged config has only %d devices", len(cfg.Devices))
				}
			} else if cfg.Seccomp == nil || len(cfg.Seccomp.Syscalls) == 0 {
				t.Fatal("no seccomp filter")
			}
		})
	}
}
