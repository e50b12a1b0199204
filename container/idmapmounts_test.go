package container

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func podMapping() []IDMapping { return []IDMapping{{ContainerID: 0, HostID: 1_200_000, Length: 65536}} }

// TestBuildSpecIDMappedMounts: the kubelet's mounts in a user namespace
// pod carry the pod's mappings and become idmapped binds through the
// pause's user namespace; other mappings are handed over explicitly; a
// mount without mappings stays a plain bind.
func TestBuildSpecIDMappedMounts(t *testing.T) {
	in := testInput(t)
	in.Pod.UserNS = &IDMappings{UIDs: podMapping(), GIDs: podMapping()}
	other := []IDMapping{{ContainerID: 1000, HostID: 1_200_000, Length: 65536}}
	in.Config.Mounts = []Mount{
		{ContainerPath: "/pod", HostPath: t.TempDir(), UIDMappings: podMapping(), GIDMappings: podMapping()},
		{ContainerPath: "/other", HostPath: t.TempDir(), UIDMappings: other, GIDMappings: other},
		{ContainerPath: "/plain", HostPath: t.TempDir()},
	}
	s := mustBuild(t, in)
	if m := findMount(t, s.Mounts, "/pod"); !slices.Contains(m.Options, "idmap") || m.UIDMappings != nil || m.GIDMappings != nil {
		t.Errorf("pod-mapped mount = %+v, want option idmap and no explicit mappings", m)
	}
	want := []specs.LinuxIDMapping{{ContainerID: 1000, HostID: 1_200_000, Size: 65536}}
	if m := findMount(t, s.Mounts, "/other"); slices.Contains(m.Options, "idmap") || !slices.Equal(m.UIDMappings, want) || !slices.Equal(m.GIDMappings, want) {
		t.Errorf("other-mapped mount = %+v, want explicit mappings %+v", m, want)
	}
	if m := findMount(t, s.Mounts, "/plain"); slices.Contains(m.Options, "idmap") || m.UIDMappings != nil {
		t.Errorf("plain mount = %+v, want no idmapping", m)
	}
}

func TestBuildSpecIDMappedMountsRefused(t *testing.T) {
	userns := &IDMappings{UIDs: podMapping(), GIDs: podMapping()}
	cases := map[string]struct {
		userns *IDMappings
		uids   []IDMapping
		gids   []IDMapping
	}{
		"no pod user namespace": {nil, podMapping(), podMapping()},
		"UIDs only":             {userns, podMapping(), nil},
		"GIDs only":             {userns, nil, podMapping()},
		"maps host root":        {userns, []IDMapping{{ContainerID: 0, HostID: 0, Length: 1}}, podMapping()},
		"empty range":           {userns, podMapping(), []IDMapping{{ContainerID: 0, HostID: 5000, Length: 0}}},
		"overlapping": {userns, []IDMapping{{ContainerID: 0, HostID: 5000, Length: 10}, {ContainerID: 5, HostID: 9000, Length: 10}},
			podMapping()},
		"past the highest ID": {userns, []IDMapping{{ContainerID: 0, HostID: 1<<32 - 10, Length: 100}}, podMapping()},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := testInput(t)
			in.Pod.UserNS = c.userns
			in.Config.Mounts = []Mount{{ContainerPath: "/data", HostPath: t.TempDir(), UIDMappings: c.uids, GIDMappings: c.gids}}
			_, err := BuildSpec(in)
			wantInvalid(t, err)
		})
	}
}
