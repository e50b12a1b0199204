package container

import (
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// allowed reports whether some rule of the profile allows the syscall.
func allowed(sc *specs.LinuxSeccomp, name string) bool {
	for _, r := range sc.Syscalls {
		if r.Action == specs.ActAllow && slices.Contains(r.Names, name) {
			return true
		}
	}
	return false
}

func TestSeccompRuntimeDefault(t *testing.T) {
	in := testInput(t)
	s := mustBuild(t, in)
	sc := s.Linux.Seccomp
	if sc == nil {
		t.Fatal("RuntimeDefault gave no seccomp profile")
	}
	if sc.DefaultAction != specs.ActErrno {
		t.Fatalf("default action = %s, want SCMP_ACT_ERRNO", sc.DefaultAction)
	}
	if !allowed(sc, "read") || !allowed(sc, "execve") {
		t.Fatal("basic syscalls not allowed")
	}
	if allowed(sc, "mount") || allowed(sc, "sethostname") {
		t.Fatal("mount/sethostname allowed without CAP_SYS_ADMIN")
	}
	if len(sc.Architectures) == 0 {
		t.Fatal("no architectures")
	}

	in.Config.Security.CapAdd = []string{"SYS_ADMIN"}
	sc = mustBuild(t, in).Linux.Seccomp
	if !allowed(sc, "mount") || !allowed(sc, "sethostname") {
		t.Fatal("mount/sethostname not allowed with CAP_SYS_ADMIN")
	}

	// "Privileged" means no seccomp at all.
	in.Config.Security.Privileged = true
	if sc := mustBuild(t, in).Linux.Seccomp; sc != nil {
		t.Fatalf("privileged container has seccomp %+v", sc.DefaultAction)
	}
}

func TestSeccompUnconfined(t *testing.T) {
	in := testInput(t)
	in.Config.Security.Seccomp = Profile{Type: ProfileUnconfined}
	if sc := mustBuild(t, in).Linux.Seccomp; sc != nil {
		t.Fatal("unconfined container has seccomp")
	}
	in.Config.Security.Seccomp = Profile{Type: ProfileUnconfined, Path: "/x.json"}
	_, err := BuildSpec(in)
	wantInvalid(t, err)
}

func TestSeccompLocalhost(t *testing.T) {
	dir := t.TempDir()
	oci := filepath.Join(dir, "oci.json")
	writeFile(t, oci, `{
     "defaultAction": "SCMP_ACT_ALLOW",
     "architectures": ["SCMP_ARCH_X86_64"],
     "syscalls": [{"names": ["sethostname"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
}`)
	docker := filepath.Join(dir, "docker.json")
	writeFile(t, docker, `{
     "defaultAction": "SCMP_ACT_ERRNO",
     "syscalls": [
         {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
         {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
         {"name": "chmod", "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_SYS_ADMIN"]}}
     ]
}`)
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"defaultAction": `)

	in := testInput(t)
	in.Config.Security.Seccomp = Profile{Type: ProfileLocalhost, Path: oci}
	sc := mustBuild(t, in).Linux.Seccomp
	if sc == nil || sc.DefaultAction != specs.ActAllow || len(sc.Syscalls) != 1 ||
		sc.Syscalls[0].Action != specs.ActErrno || !slices.Equal(sc.Syscalls[0].Names, []string{"sethostname"}) ||
		!slices.Equal(sc.Architectures, []specs.Arch{specs.ArchX86_64}) {
		t.Fatalf("OCI profile = %+v", sc)
	}

	// The "localhost/" prefix is tolerated.
	in.Config.Security.Seccomp = Profile{Type: ProfileLocalhost, Path: "localhost/" + docker}
	sc = mustBuild(t, in).Linux.Seccomp
	if !allowed(sc, "read") || allowed(sc, "mount") || !allowed(sc, "chmod") {
		t.Fatalf("Docker profile without CAP_SYS_ADMIN = %+v", sc.Syscalls)
	}
	in.Config.Security.CapAdd = []string{"SYS_ADMIN"}
	sc = mustBuild(t, in).Linux.Seccomp
	if !allowed(sc, "mount") || allowed(sc, "chmod") {
		t.Fatalf("Docker profile with CAP_SYS_ADMIN = %+v", sc.Syscalls)
	}

	// Privileged ignores the profile.
	in.Config.Security.Privileged = true
	if sc := mustBuild(t, in).Linux.Seccomp; sc != nil {
		t.Fatal("privileged container has seccomp")
	}

	for name, path := range map[string]string{
		"missing":  filepath.Join(dir, "missing.json"),
		"bad json": bad,
		"relative": "profiles/x.json",
		"empty":    "",
	} {
		t.Run(name, func(t *testing.T) {
			in := testInput(t)
			in.Config.Security.Seccomp = Profile{Type: ProfileLocalhost, Path: path}
			_, err := BuildSpec(in)
			wantInvalid(t, err)
		})
	}
}
