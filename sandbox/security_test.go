package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func i64(v int64) *int64 { return &v }

// TestValidateSecurity: the pause's IDs must be valid (and mapped in a pod
// user namespace); a Localhost seccomp profile must exist and load.
func TestValidateSecurity(t *testing.T) {
	md := Metadata{Name: "n", Namespace: "ns", UID: "u"}
	mapped := IDMapping{ContainerID: 0, HostID: 1 << 20, Length: 1 << 16}
	userns := Namespaces{UserNS: &UserNS{Mode: ModePod, UIDs: []IDMapping{mapped}, GIDs: []IDMapping{mapped}}}
	dir := t.TempDir()
	good, junk := filepath.Join(dir, "good.json"), filepath.Join(dir, "junk.json")
	if err := os.WriteFile(good, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte(`{not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := map[string]Config{
		"ids":                {Security: Security{RunAsUser: i64(1000), RunAsGroup: i64(0), SupplementalGroups: []int64{5, 1 << 30}}},
		"ids in userns":      {Namespaces: userns, Security: Security{RunAsUser: i64(65535), RunAsGroup: i64(1), SupplementalGroups: []int64{2}}},
		"runtime default":    {Security: Security{Seccomp: SeccompProfile{Type: SeccompRuntimeDefault}}},
		"localhost":          {Security: Security{Seccomp: SeccompProfile{Type: SeccompLocalhost, Path: good}}},
		"localhost/ prefix":  {Security: Security{Seccomp: SeccompProfile{Type: SeccompLocalhost, Path: "localhost/" + good}}},
		"readonly rootfs":    {Security: Security{ReadonlyRootfs: true}},
		"high id, no userns": {Security: Security{RunAsUser: i64(1<<31 - 1)}},
	}
	for name, cfg := range ok {
		cfg.Metadata = md
		if err := validate(&cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]Config{
		"negative uid":           {Security: Security{RunAsUser: i64(-1)}},
		"uid past 2^31-1":        {Security: Security{RunAsUser: i64(1 << 31)}},
		"negative gid":           {Security: Security{RunAsGroup: i64(-5)}},
		"negative group":         {Security: Security{SupplementalGroups: []int64{3, -1}}},
		"uid unmapped in userns": {Namespaces: userns, Security: Security{RunAsUser: i64(70000)}},
		"gid unmapped in userns": {Namespaces: userns, Security: Security{RunAsGroup: i64(1 << 16)}},
		"group unmapped":         {Namespaces: userns, Security: Security{SupplementalGroups: []int64{1 << 17}}},
		"missing localhost":      {Security: Security{Seccomp: SeccompProfile{Type: SeccompLocalhost, Path: filepath.Join(dir, "none.json")}}},
		"junk localhost":         {Security: Security{Seccomp: SeccompProfile{Type: SeccompLocalhost, Path: junk}}},
		"relative localhost":     {Security: Security{Seccomp: SeccompProfile{Type: SeccompLocalhost, Path: "profile.json"}}},
		"path without localhost": {Security: Security{Seccomp: SeccompProfile{Type: SeccompRuntimeDefault, Path: good}}},
		"unknown type":           {Security: Security{Seccomp: SeccompProfile{Type: 9}}},
		"too many groups":        {Security: Security{SupplementalGroups: make([]int64, maxGroups+1)}},
	}
	for name, cfg := range bad {
		cfg.Metadata = md
		if err := validate(&cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestMonitorSpecCarriesPauseIDs(t *testing.T) {
	r := Record{ID: "p", Config: Config{Security: Security{RunAsUser: i64(7), RunAsGroup: i64(8), SupplementalGroups: []int64{9}}}}
	p := r.monitorSpec(&Manager{}).Pause
	if p.RunAsUser == nil || *p.RunAsUser != 7 || p.RunAsGroup == nil || *p.RunAsGroup != 8 || len(p.Groups) != 1 || p.Groups[0] != 9 {
		t.Fatalf("pause = %+v", p)
	}
}
