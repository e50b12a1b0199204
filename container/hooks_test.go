package container

import (
	"reflect"
	"testing"

	"github.com/minicri/minicri/hook"
)

// Info.Hook is the container as hooks (NRI) see it: the request's command
// and args as one argv, a state of NRI's four, the seccomp profile's kind.
func TestInfoHook(t *testing.T) {
	var info Info
	info.ID, info.PodID = "c", "p"
	info.Config.Command, info.Config.Args = []string{"/bin/app"}, []string{"--flag"}
	info.Config.Security.Seccomp = Profile{Type: ProfileLocalhost, Path: "/p.json"}
	info.User = &User{UID: 1, GID: 2, Groups: []uint32{3}}
	for state, want := range map[State]hook.ContainerState{
		StateCreating: hook.StateUnknown, StateCreated: hook.StateCreated, StateRunning: hook.StateRunning,
		StateExited: hook.StateStopped, StateRemoving: hook.StateStopped,
	} {
		info.Status.State = state
		h := info.Hook()
		if h.State != want || h.ID != "c" || h.PodID != "p" || !reflect.DeepEqual(h.Args, []string{"/bin/app", "--flag"}) ||
			h.Seccomp != (hook.SeccompProfile{Type: hook.SeccompLocalhost, Path: "/p.json"}) || h.User.Groups[0] != 3 {
			t.Errorf("%s: %+v", state, h)
		}
	}
	for base, want := range map[string]hook.SeccompProfile{
		"":        {Type: hook.SeccompRuntimeDefault},
		"/b.json": {Type: hook.SeccompLocalhost, Path: "/b.json"},
	} {
		info.Config.Security.Seccomp = Profile{Type: ProfileOCI, Ref: "r@sha256:1", Path: base}
		if got := info.Hook().Seccomp; got != want {
			t.Errorf("OCI profile on base %q = %+v, want its base %+v (never unconfined)", base, got, want)
		}
	}
	info.Config.Security.Seccomp = Profile{Type: ProfileUnspecified}
	if s := info.Hook().Seccomp.Type; s != hook.SeccompUnconfined {
		t.Errorf("unspecified seccomp profile = %v, want unconfined (the CRI's default)", s)
	}
}
