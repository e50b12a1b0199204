package cgroupmount

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/minicri/minicri/internal/errdefs"
)

var (
	hostV1         = Host{}
	hostV2         = Host{Unified: true, Options: []string{"memory_recursiveprot"}}
	hostV2Delegate = Host{Unified: true, Options: []string{"nsdelegate", "memory_recursiveprot"}}
)

// want is one row of the CRI's table (api.proto, CgroupMountMode and
// CgroupNamespace) as minicri honours it.
type want struct {
	err      error // errdefs kind, nil: accepted
	own      bool
	writable bool
	delegate bool
}

// expected states the rules once more, in the CRI's words, for every
// combination; the explicit rows of TestDecideRows pin the notable ones.
func expected(r Request, h Host) want {
	switch {
	case r.Namespace == Pod || r.Namespace == Target:
		return want{err: errdefs.ErrInvalid} // "MUST fail container creation for POD or TARGET"
	case r.Mode == ReadOnly && r.Privileged:
		return want{err: errdefs.ErrInvalid} // "fails creation of a privileged container that requests this mode"
	case r.Mode == ReadWrite && r.Namespace == Node && !r.Privileged:
		return want{err: errdefs.ErrInvalid} // "MUST fail ... READ_WRITE with NODE when the container is not privileged"
	case r.Namespace == Container && !h.Unified:
		return want{err: errdefs.ErrFailedPrecondition} // minicri: no cgroup namespace on v1
	case r.Mode == ReadWrite && (!h.Unified || !slices.Contains(h.Options, "nsdelegate")):
		return want{err: errdefs.ErrFailedPrecondition} // "requires the host to mount cgroup v2 with nsdelegate"
	}
	own := r.Namespace == Container || (r.Namespace == Default && h.Unified && !r.Privileged)
	w := r.Mode == ReadWrite || (r.Mode == Unspecified && r.Privileged)
	return want{own: own, writable: w, delegate: w && own && r.Mode == ReadWrite}
}

func TestDecideEveryCombination(t *testing.T) {
	hosts := map[string]Host{"v1": hostV1, "v2": hostV2, "v2+nsdelegate": hostV2Delegate}
	for hn, h := range hosts {
		for _, m := range []Mode{Unspecified, ReadOnly, ReadWrite} {
			for _, ns := range []Namespace{Default, Container, Node, Pod, Target} {
				for _, priv := range []bool{false, true} {
					r := Request{Mode: m, Namespace: ns, Privileged: priv}
					name := fmt.Sprintf("%s/mode%d/%s/privileged=%v", hn, m, ns, priv)
					t.Run(name, func(t *testing.T) { checkDecision(t, r, h, expected(r, h)) })
				}
			}
		}
	}
}

func checkDecision(t *testing.T, r Request, h Host, w want) {
	t.Helper()
	v, err := Decide(r, h)
	if w.err != nil {
		if !errors.Is(err, w.err) {
			t.Fatalf("Decide(%+v, %+v) = %+v, %v; want an error of kind %v", r, h, v, err, w.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decide(%+v, %+v): %v", r, h, err)
	}
	if v.OwnNamespace != w.own || v.Writable != w.writable || v.Delegate != w.delegate {
		t.Fatalf("Decide(%+v, %+v) = %+v; want own=%v writable=%v delegate=%v", r, h, v, w.own, w.writable, w.delegate)
	}
	access := "ro"
	if w.writable {
		access = "rw"
	}
	if !slices.Contains(v.MountOptions, access) || slices.Contains(v.MountOptions, map[string]string{"ro": "rw", "rw": "ro"}[access]) {
		t.Fatalf("mount options %v; want %s", v.MountOptions, access)
	}
	for _, o := range h.Options {
		if slices.Contains(v.MountOptions, o) == v.OwnNamespace {
			t.Fatalf("mount options %v with own namespace %v: the host's %s must be kept exactly in the host's namespace", v.MountOptions, v.OwnNamespace, o)
		}
	}
}

// TestDecideRows pins the rows the CRI and the issue name, with their
// messages.
func TestDecideRows(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Request
		h    Host
		want want
		msg  string
	}{
		{"nil keeps today's rule on v2", Request{}, hostV2, want{own: true}, ""},
		{"nil keeps today's rule on v2, privileged", Request{Privileged: true}, hostV2, want{writable: true}, ""},
		{"nil keeps today's rule on v1", Request{}, hostV1, want{}, ""},
		{"CONTAINER for privileged", Request{Namespace: Container, Privileged: true}, hostV2, want{own: true, writable: true}, ""},
		{"NODE for unprivileged", Request{Namespace: Node}, hostV2Delegate, want{}, ""},
		{"NODE on v1", Request{Namespace: Node}, hostV1, want{}, ""},
		{"CONTAINER on v1", Request{Namespace: Container}, hostV1, want{err: errdefs.ErrFailedPrecondition}, "needs cgroup v2"},
		{"POD", Request{Namespace: Pod}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "mode POD is not supported"},
		{"TARGET", Request{Namespace: Target}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "mode TARGET is not supported"},
		{"READ_ONLY privileged", Request{Mode: ReadOnly, Privileged: true}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "READ_ONLY cannot be honoured for a privileged container"},
		{"READ_ONLY unprivileged", Request{Mode: ReadOnly}, hostV1, want{}, ""},
		{"READ_WRITE", Request{Mode: ReadWrite}, hostV2Delegate, want{own: true, writable: true, delegate: true}, ""},
		{"READ_WRITE privileged", Request{Mode: ReadWrite, Privileged: true}, hostV2Delegate, want{writable: true}, ""},
		{"READ_WRITE privileged NODE", Request{Mode: ReadWrite, Namespace: Node, Privileged: true}, hostV2Delegate, want{writable: true}, ""},
		{"READ_WRITE NODE unprivileged", Request{Mode: ReadWrite, Namespace: Node}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "cgroup namespace NODE"},
		{"READ_WRITE NODE unprivileged on v1: the request first", Request{Mode: ReadWrite, Namespace: Node}, hostV1, want{err: errdefs.ErrInvalid}, "cgroup namespace NODE"},
		{"READ_WRITE on v1", Request{Mode: ReadWrite}, hostV1, want{err: errdefs.ErrFailedPrecondition}, "this node's /sys/fs/cgroup is cgroup v1"},
		{"READ_WRITE without nsdelegate", Request{Mode: ReadWrite}, hostV2, want{err: errdefs.ErrFailedPrecondition}, "mounted without it"},
		{"unknown mode", Request{Mode: 7}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "unknown cgroup_mount_mode 7"},
		{"unknown namespace", Request{Namespace: 9}, hostV2Delegate, want{err: errdefs.ErrInvalid}, "unknown cgroup namespace mode 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkDecision(t, c.r, c.h, c.want)
			if c.msg == "" {
				return
			}
			if _, err := Decide(c.r, c.h); err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v; want one saying %q", err, c.msg)
			}
		})
	}
}

func TestHostFeatures(t *testing.T) {
	for _, c := range []struct {
		h      Host
		rw, ns bool
	}{
		{hostV1, false, false},
		{Host{Options: []string{"nsdelegate"}}, false, false}, // never v1, whatever it says
		{hostV2, false, true},
		{hostV2Delegate, true, true},
	} {
		if got := c.h.ReadWriteSupported(); got != c.rw {
			t.Errorf("%+v: ReadWriteSupported %v, want %v", c.h, got, c.rw)
		}
		if got := c.h.NamespacesSupported(); got != c.ns {
			t.Errorf("%+v: NamespacesSupported %v, want %v", c.h, got, c.ns)
		}
	}
}
