package sandbox

import (
	"errors"
	"testing"
)

// The attack: a pod user namespace that maps the host's root (container
// root is host root again), or ranges the kernel refuses later.
func TestUserNSMappingsCannotReachHostRoot(t *testing.T) {
	md := Metadata{Name: "n", Namespace: "ns", UID: "u"}
	userns := func(uid, gid IDMapping) Namespaces {
		return Namespaces{UserNS: &UserNS{Mode: ModePod, UIDs: []IDMapping{uid}, GIDs: []IDMapping{gid}}}
	}
	good := IDMapping{ContainerID: 0, HostID: 1 << 20, Length: 1 << 16}
	bad := map[string]Namespaces{
		"uid host 0":       userns(IDMapping{HostID: 0, Length: 1 << 16}, good),
		"gid host 0":       userns(good, IDMapping{HostID: 0, Length: 1 << 16}),
		"uid overflow":     userns(IDMapping{HostID: 1<<32 - 1<<15, Length: 1 << 16}, good),
		"gid to (gid_t)-1": userns(good, IDMapping{HostID: 1<<32 - 1<<16, Length: 1 << 16}),
	}
	for name, ns := range bad {
		cfg := Config{Metadata: md, Namespaces: ns}
		if err := validate(&cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	cfg := Config{Metadata: md, Namespaces: userns(good, good)}
	if err := validate(&cfg); err != nil {
		t.Errorf("a sound mapping: %v", err)
	}
	cfg.Privileged = true
	if err := validate(&cfg); !errors.Is(err, ErrInvalid) {
		t.Errorf("privileged pod with its own user namespace: got %v, want ErrInvalid", err)
	}
	target := Config{Metadata: md, Namespaces: Namespaces{PID: ModeTarget}}
	if err := validate(&target); !errors.Is(err, ErrInvalid) {
		t.Errorf("pod PID mode TARGET: got %v, want ErrInvalid", err)
	}
}

// The attack: two different pods whose metadata differ only in where a "/"
// falls. Neither may be mistaken for the other (a false AlreadyExists, or a
// retry handed the other pod's ID).
func TestPodKeysDoNotCollide(t *testing.T) {
	pairs := [][2]Metadata{
		{{Namespace: "a/b", Name: "c", UID: "u"}, {Namespace: "a", Name: "b/c", UID: "u"}},
		{{Namespace: "n", Name: "a/u", UID: "v"}, {Namespace: "n", Name: "a", UID: "u/v"}},
		{{Namespace: "n", Name: "p", UID: "u/1", Attempt: 2}, {Namespace: "n", Name: "p", UID: "u", Attempt: 1}},
		{{Namespace: `a"/"b`, Name: "c", UID: "u"}, {Namespace: "a", Name: `b"/"c`, UID: "u"}},
	}
	for _, p := range pairs {
		if p[0].key() == p[1].key() {
			t.Errorf("%+v and %+v share the key %s", p[0], p[1], p[0].key())
		}
	}
}
