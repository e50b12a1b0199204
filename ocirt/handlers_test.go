package ocirt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func fakeRuntime(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rt")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbeFeatures(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   Features
	}{
		{`echo '{"mountOptions":["ro","rro"],"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}'`, Features{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
		{`echo '{"linux":{"namespaces":["cgroup","user"]}}'`, Features{CgroupNamespaces: true}},
		{`echo '{"mountOptions":["ro","rro"],"linux":{"namespaces":["user"]}}'`, Features{RecursiveReadOnlyMounts: true}},
		{`echo '{"mountOptions":["ro"],"linux":{"mountExtensions":{"idmap":{"enabled":false}}}}'`, Features{}},
		{`echo 'No help topic for features' >&2; exit 1`, Features{}}, // runc < 1.1
		{`echo 'not json'`, Features{}},
	} {
		if got := ProbeFeatures(context.Background(), fakeRuntime(t, tc.script)); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.script, got, tc.want)
		}
	}
}

func TestHandlers(t *testing.T) {
	rt := fakeRuntime(t, `echo '{"mountOptions":["rro"]}'`)
	hs := NewHandlers(context.Background(), map[string]*Binary{"runc": {Path: rt, Root: "/r"}, "crun": {Path: rt, Root: "/c"}})
	var names []string
	for _, h := range hs.List() {
		names = append(names, h.Name)
	}
	if len(names) != 3 || names[0] != "" || names[1] != "crun" || names[2] != "runc" {
		t.Fatalf("handlers %q: want the built-in first, then by name", names)
	}
	if b, err := hs.Binary(""); b != nil || err != nil {
		t.Errorf("built-in: %v %v", b, err)
	}
	if b, err := hs.Binary("runc"); err != nil || b.Root != "/r" {
		t.Errorf("runc: %+v %v", b, err)
	}
	if err := hs.Check("nope", false); !errors.Is(err, ErrUnknownHandler) || err.Error() != `unknown runtime handler "nope"` {
		t.Errorf("unknown: %v", err)
	}
	if err := hs.Check("", true); err != nil {
		t.Errorf("built-in with userns: %v", err)
	}
	if err := hs.Check("runc", true); err == nil {
		t.Error("a handler without idmapped mounts accepted a userns pod")
	}
}

func TestRunErrorClassifiesRuncMessages(t *testing.T) {
	cmd := exec.Command("/usr/sbin/runc", "--root", "/x", "kill", "id", "9")
	for msg, want := range map[string]error{
		"container not running":                    ErrNotRunning,
		`container "abc" does not exist`:           ErrNotExist,
		"time=... level=error msg=\"exec failed\"": nil,
	} {
		err := runError(cmd, errors.New("exit status 1"), msg)
		if want != nil && !errors.Is(err, want) || want == nil && (errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotExist)) {
			t.Errorf("%q: %v, want %v", msg, err, want)
		}
		if got := cmdVerb(cmd.Args); got != "kill" {
			t.Errorf("verb %q", got)
		}
	}
}
