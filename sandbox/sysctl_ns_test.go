package sandbox

import (
	"errors"
	"testing"
)

func TestUTSAndUserSysctlsNeedTheirNamespace(t *testing.T) {
	own := Namespaces{UserNS: &UserNS{Mode: ModePod}}
	hostNet := Namespaces{Network: ModeNode}
	for _, c := range []struct {
		name string
		ns   Namespaces
		ok   bool
	}{
		{"kernel.domainname", Namespaces{}, true},
		{"kernel.domainname", hostNet, false},
		{"kernel.hostname", Namespaces{}, false}, // the hostname field sets it
		{"user.max_user_namespaces", own, true},
		{"user.max_user_namespaces", Namespaces{}, false},
		{"user.max_user_namespaces", Namespaces{UserNS: &UserNS{Mode: ModeNode}}, false},
	} {
		err := checkSysctl(c.name, "1", c.ns)
		if c.ok && err != nil {
			t.Errorf("%s in %+v: %v", c.name, c.ns, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s in %+v: %v, want ErrInvalid", c.name, c.ns, err)
		}
	}
}
