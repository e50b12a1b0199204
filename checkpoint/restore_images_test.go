package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/apparmor"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/creds"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"

	"github.com/minicri/minicri/security"
)

func writeImage(t *testing.T, path, magic string, msgs ...proto.Message) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := &crit.CriuImage{Magic: magic}
	for _, m := range msgs {
		img.Entries = append(img.Entries, &crit.CriuEntry{Message: m})
	}
	if err := crit.New(nil, f, "", false, false).Encode(img); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCredsAgainstImages: a root task with nothing of its own passes;
// the same images with AppArmor policy in apparmor.img (CRIU would load it
// into the kernel) are refused.
func TestCheckCredsAgainstImages(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, filepath.Join(dir, "core-1.img"), "CORE", &criucore.CoreEntry{
		Mtype: criucore.CoreEntry_X86_64.Enum(), Tc: &criucore.TaskCoreEntry{TaskState: proto.Uint32(1), ExitCode: proto.Uint32(0), Personality: proto.Uint32(0), Flags: proto.Uint32(0), BlkSigset: proto.Uint64(0), Comm: proto.String("sh")},
		ThreadCore: &criucore.ThreadCoreEntry{FutexRla: proto.Uint64(0), FutexRlaLen: proto.Uint32(0), Creds: &creds.CredsEntry{
			Uid: proto.Uint32(0), Gid: proto.Uint32(0), Euid: proto.Uint32(0), Egid: proto.Uint32(0), Suid: proto.Uint32(0), Sgid: proto.Uint32(0),
			Fsuid: proto.Uint32(0), Fsgid: proto.Uint32(0), Secbits: proto.Uint32(0)}},
	})
	writeImage(t, filepath.Join(dir, "pstree.img"), "PSTREE", &pstree.PstreeEntry{Pid: proto.Uint32(1), Ppid: proto.Uint32(0), Pgid: proto.Uint32(1), Sid: proto.Uint32(1), Threads: []uint32{1}})
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: security.DefaultCapabilities()}}}
	if err := checkCredsAgainst(dir, spec, nil); err != nil {
		t.Fatalf("plain root task: %v", err)
	}
	writeImage(t, filepath.Join(dir, "apparmor.img"), "APPARMOR", &apparmor.ApparmorEntry{
		Namespaces: []*apparmor.AaNamespace{{Name: proto.String("ns"), Policies: []*apparmor.AaPolicy{{Name: proto.String("p"), Blob: []byte("x")}}}},
	})
	if err := checkCredsAgainst(dir, spec, nil); err == nil || !strings.Contains(err.Error(), "AppArmor LSM policy") {
		t.Errorf("apparmor.img with a namespace: %v", err)
	}
}
