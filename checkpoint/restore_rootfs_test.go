package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestCheckDiffEntry(t *testing.T) {
	root := &specs.Process{User: specs.User{UID: 0}, Capabilities: &specs.LinuxCapabilities{
		Bounding: []string{"CAP_MKNOD", "CAP_CHOWN", "CAP_FOWNER", "CAP_FSETID", "CAP_SETFCAP"}}}
	nonRoot := &specs.Process{User: specs.User{UID: 1000, GID: 1000}, NoNewPrivileges: true, Capabilities: root.Capabilities}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		st   unix.Stat_t
		p    *specs.Process
		want string // "" = allowed
	}{
		"whiteout":                {unix.Stat_t{Mode: unix.S_IFCHR}, nonRoot, ""},
		"device, root":            {unix.Stat_t{Mode: unix.S_IFCHR | 0o666, Rdev: unix.Mkdev(1, 1)}, root, ""},
		"device, non-root":        {unix.Stat_t{Mode: unix.S_IFCHR | 0o666, Rdev: unix.Mkdev(1, 1)}, nonRoot, "CAP_MKNOD"},
		"block, non-root":         {unix.Stat_t{Mode: unix.S_IFBLK | 0o666, Rdev: unix.Mkdev(8, 0)}, nonRoot, "device node"},
		"own setuid, non-root":    {unix.Stat_t{Mode: unix.S_IFREG | 0o4755, Uid: 1000}, nonRoot, ""},
		"root setuid, non-root":   {unix.Stat_t{Mode: unix.S_IFREG | 0o4755, Uid: 0}, nonRoot, "setuid to uid 0"},
		"root setuid, root":       {unix.Stat_t{Mode: unix.S_IFREG | 0o4755, Uid: 0}, root, ""},
		"other setgid, non-root":  {unix.Stat_t{Mode: unix.S_IFREG | 0o2755, Gid: 6}, nonRoot, "setgid to gid 6"},
		"setgid dir, non-root":    {unix.Stat_t{Mode: unix.S_IFDIR | 0o2775, Gid: 6}, nonRoot, ""},
		"own group setgid, nonrt": {unix.Stat_t{Mode: unix.S_IFREG | 0o2755, Gid: 1000}, nonRoot, ""},
	} {
		err := checkDiffEntry(file, &c.st, c.p)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if mayUse(nonRoot, "CAP_MKNOD") {
		t.Errorf("a non-root no_new_privs process may use its bounding set")
	}
	if !mayUse(root, "CAP_MKNOD") || mayUse(root, "CAP_SYS_ADMIN") {
		t.Errorf("root: mayUse does not follow the bounding set")
	}
}
