package seccompbpf

import (
	"bytes"
	"os"
	"testing"

	mobyseccomp "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// TestOfIsDeterministic: two helpers installing the same config hold the
// same program; another config gives another; nil gives none.
func TestOfIsDeterministic(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (ptrace of the helper's seccomp filters)")
	}
	errno := uint(unix.EPERM)
	cfg := func(deny string) *configs.Seccomp {
		return &configs.Seccomp{
			DefaultAction: configs.Allow, DefaultErrnoRet: &errno,
			Syscalls: []*configs.Syscall{{Name: deny, Action: configs.Errno, ErrnoRet: &errno}},
		}
	}
	a, err := Of(cfg("unshare"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Of(cfg("unshare"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Of(cfg("mount"))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(a) != 1 || len(b) != 1 || len(c) != 1:
		t.Fatalf("chains of %d, %d, %d filters, want 1 each", len(a), len(b), len(c))
	case len(a[0].Prog) == 0 || len(a[0].Prog)%unix.SizeofSockFilter != 0:
		t.Fatalf("program of %d bytes", len(a[0].Prog))
	case !bytes.Equal(a[0].Prog, b[0].Prog) || a[0].Flags != b[0].Flags:
		t.Error("the same config gave two programs")
	case bytes.Equal(a[0].Prog, c[0].Prog):
		t.Error("two configs gave one program")
	}
	if none, err := Of(nil); err != nil || len(none) != 0 {
		t.Errorf("nil config: %d filters, %v", len(none), err)
	}
}

// TestOfDefaultProfile: builds of the default profile (runc emits its
// ENOSYS stub in map order) are all Equivalent to one another; an
// allow-all program is not.
func TestOfDefaultProfile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (ptrace of the helper's seccomp filters)")
	}
	sc, err := mobyseccomp.GetDefaultProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := specconv.SetupSeccomp(sc)
	if err != nil {
		t.Fatal(err)
	}
	var builds [][]byte
	for range 6 {
		chain, err := Of(cfg)
		if err != nil || len(chain) != 1 {
			t.Fatalf("%d filters, %v", len(chain), err)
		}
		builds = append(builds, chain[0].Prog)
	}
	distinct := 1
	for _, b := range builds[1:] {
		if !Equivalent(b, builds[0]) {
			t.Error("two builds of the default profile are not equivalent")
		}
		if !bytes.Equal(b, builds[0]) {
			distinct++
		}
	}
	t.Logf("%d of %d builds differ from the first in bytes", distinct-1, len(builds)-1)
	allow := []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}
	if Equivalent(allow, builds[0]) {
		t.Error("allow-all taken for the default profile")
	}
}
