package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
)

func writePstree(t *testing.T, entries ...*pstree.PstreeEntry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pstree.img")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := &crit.CriuImage{Magic: "PSTREE"}
	for _, e := range entries {
		img.Entries = append(img.Entries, &crit.CriuEntry{Message: e})
	}
	if err := crit.New(nil, f, "", false, false).Encode(img); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMaxCheckpointPid(t *testing.T) {
	path := writePstree(t,
		&pstree.PstreeEntry{Pid: proto.Uint32(7), Ppid: proto.Uint32(0), Pgid: proto.Uint32(7), Sid: proto.Uint32(5), Threads: []uint32{7}},
		&pstree.PstreeEntry{Pid: proto.Uint32(9), Ppid: proto.Uint32(7), Pgid: proto.Uint32(7), Sid: proto.Uint32(5), Threads: []uint32{9, 40}},
		&pstree.PstreeEntry{Pid: proto.Uint32(11), Ppid: proto.Uint32(7), Pgid: proto.Uint32(33), Sid: proto.Uint32(5), Threads: []uint32{11}},
	)
	if top, err := maxCheckpointPid(path); err != nil || top != 40 {
		t.Errorf("maxCheckpointPid = %d, %v; want 40 (a thread)", top, err)
	}
	if _, err := maxCheckpointPid(writePstree(t)); err == nil {
		t.Error("an empty pstree.img gave a pid")
	}
	if _, err := maxCheckpointPid(filepath.Join(t.TempDir(), "none.img")); err == nil {
		t.Error("a missing pstree.img gave a pid")
	}
}

func TestJoinedPidNS(t *testing.T) {
	for _, c := range []struct {
		ns   []specs.LinuxNamespace
		want string
	}{
		{[]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/1/ns/net"}, {Type: specs.PIDNamespace, Path: "/proc/5/ns/pid"}}, "/proc/5/ns/pid"},
		{[]specs.LinuxNamespace{{Type: specs.PIDNamespace}}, ""}, // its own
		{nil, ""}, // the host's
	} {
		if got := joinedPidNS(&specs.Spec{Linux: &specs.Linux{Namespaces: c.ns}}); got != c.want {
			t.Errorf("joinedPidNS(%v) = %q, want %q", c.ns, got, c.want)
		}
	}
}

func TestSameNamespace(t *testing.T) {
	self, err := os.Open("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	if same, err := sameNamespace(self, "/proc/1/ns/pid"); err != nil || !same {
		t.Skipf("this test runs in a PID namespace of its own: %v %v", same, err)
	}
	if same, err := sameNamespace(self, "/proc/self/ns/mnt"); err != nil || same {
		t.Errorf("pid and mnt namespaces: same %v, %v", same, err)
	}
	if _, err := sameNamespace(self, "/proc/self/ns/none"); err == nil {
		t.Errorf("a missing namespace file: no error")
	}
}
