package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// What the spec minicri built for the request allows at each mount point
// of a checkpoint's mount image (restore_mounts.go checks the tree):
// CRIU mounts what the image says, so each entry must match the spec's
// mount there point by point and option by option.

// mountRule is what the spec allows at one mount point.
type mountRule struct {
	fstypes  []mnt.Fstype // allowed when the mount is not external
	external bool         // an external (bind) mount is allowed
	// extKey is the key an external mount must carry ("": its own mount
	// point). CRIU binds the host source the restore maps the key to
	// (libcontainer: each bind's destination to its source, "/dev/null" to
	// /dev/null for masked files): another bind's key would put that
	// bind's source here with this entry's flags.
	extKey string
	// flags are the restrictions the mount must have: MS_RDONLY,
	// MS_NOSUID, MS_NODEV, MS_NOEXEC as the spec's options ask. More is
	// allowed (a bind keeps its host source's locked flags).
	flags uint32
	root  string  // the root a non-external mount must have ("": any)
	share sharing // the most propagation the spec gives the mount
}

// sharing is a mount's propagation, ordered by what it lets through.
type sharing uint8

const (
	sharePrivate sharing = iota // no peers, no master
	shareSlave                  // receives its master's mounts
	shareShared                 // and sends its own to its peers
)

var sharingName = map[sharing]string{sharePrivate: "private", shareSlave: "slave", shareShared: "shared"}

// checkEntry checks one image entry against its rule.
func checkEntry(m *mnt.MntEntry, rule mountRule) error {
	mp := m.GetMountpoint()
	ext, typ := m.GetExtKey() != "", fstypeOfEntry(m)
	key := rule.extKey
	if key == "" {
		key = mp
	}
	switch {
	case m.GetExtMount():
		// CRIU's old form (the key in root) is never written by the CRIU
		// minicri dumps with.
		return fmt.Errorf("mount at %s is external in CRIU's old form (ext_mount)", mp)
	case ext && !rule.external:
		return fmt.Errorf("external mount at %s, where the spec mounts %v", mp, rule.fstypes)
	case ext && m.GetExtKey() != key:
		return fmt.Errorf("external mount at %s binds the source of %q; the spec binds the source of %q there", mp, m.GetExtKey(), key)
	case !ext && !slices.Contains(rule.fstypes, typ):
		return fmt.Errorf("%s mount at %s, where the spec allows %v", typ, mp, rule.fstypes)
	case !ext && rule.root != "" && m.GetRoot() != rule.root:
		return fmt.Errorf("mount at %s shows %s of its filesystem, not %s", mp, m.GetRoot(), rule.root)
	}
	switch missing := rule.flags &^ m.GetFlags(); {
	case missing&unix.MS_RDONLY != 0:
		return fmt.Errorf("mount at %s is writable; the spec mounts it read-only", mp)
	case missing != 0:
		return fmt.Errorf("mount at %s lacks %s; the spec mounts it so", mp, flagNames(missing))
	case m.GetSharedId() != 0 && rule.share < shareShared:
		return fmt.Errorf("mount at %s is shared; the spec makes it %s", mp, sharingName[rule.share])
	case m.GetMasterId() != 0 && rule.share < shareSlave:
		return fmt.Errorf("mount at %s is a slave; the spec makes it %s", mp, sharingName[rule.share])
	}
	return nil
}

// mountFlags are the restricting options a spec mount may have.
var mountFlags = []struct {
	opts []string
	flag uint32
	name string
}{
	{[]string{"ro", "rro"}, unix.MS_RDONLY, "ro"},
	{[]string{"nosuid"}, unix.MS_NOSUID, "nosuid"},
	{[]string{"nodev"}, unix.MS_NODEV, "nodev"},
	{[]string{"noexec"}, unix.MS_NOEXEC, "noexec"},
}

// flagsOf are the restrictions a spec mount's options ask for.
func flagsOf(options []string) uint32 {
	var f uint32
	for _, mf := range mountFlags {
		for _, o := range mf.opts {
			if slices.Contains(options, o) {
				f |= mf.flag
			}
		}
	}
	return f
}

func flagNames(f uint32) string {
	var names []string
	for _, mf := range mountFlags {
		if f&mf.flag != 0 {
			names = append(names, mf.name)
		}
	}
	return strings.Join(names, ",")
}

// sharingOf is the propagation options give a mount (dflt if none).
func sharingOf(options []string, dflt sharing) sharing {
	for _, o := range slices.Backward(options) {
		switch o {
		case "shared", "rshared":
			return shareShared
		case "slave", "rslave":
			return shareSlave
		case "private", "rprivate", "unbindable", "runbindable":
			return sharePrivate
		}
	}
	return dflt
}

// rootSharing is the propagation of the container's root and of the
// mounts made under it: the spec's rootfsPropagation, runc's rslave if
// none.
func rootSharing(spec *specs.Spec) sharing {
	if spec.Linux == nil || spec.Linux.RootfsPropagation == "" {
		return shareSlave
	}
	return sharingOf([]string{spec.Linux.RootfsPropagation}, shareSlave)
}

// ruleFor is what the spec allows for the image's mount m at its mount point.
func ruleFor(m *mnt.MntEntry, spec *specs.Spec) (mountRule, bool) {
	mp, share := m.GetMountpoint(), rootSharing(spec)
	if mp == "/" {
		r := mountRule{fstypes: []mnt.Fstype{mnt.Fstype_OVERLAYFS}, root: "/", share: share}
		if spec.Root != nil && spec.Root.Readonly {
			r.flags = unix.MS_RDONLY
		}
		return r, true
	}
	if spec.Linux != nil {
		if slices.Contains(spec.Linux.MaskedPaths, mp) {
			// runc: /dev/null bound over a file, a read-only tmpfs over a directory.
			if m.GetExtKey() != "" {
				return mountRule{external: true, extKey: "/dev/null", share: share}, true
			}
			return mountRule{fstypes: []mnt.Fstype{mnt.Fstype_TMPFS}, root: "/", flags: unix.MS_RDONLY, share: share}, true
		}
		if slices.Contains(spec.Linux.ReadonlyPaths, mp) {
			// runc: a read-only bind of the path onto itself.
			typ, rel := parentOf(mp, spec)
			return mountRule{fstypes: []mnt.Fstype{typ}, flags: unix.MS_RDONLY, root: rel, share: share}, true
		}
	}
	for _, sm := range slices.Backward(spec.Mounts) {
		if sm.Destination == mp {
			return specMountRule(sm, m, share), true
		}
		// cgroup v1: libcontainer mounts one bind per controller under the
		// cgroup mount, external in the image.
		if sm.Type == "cgroup" && strings.HasPrefix(mp, sm.Destination+"/") && !strings.Contains(strings.TrimPrefix(mp, sm.Destination+"/"), "/") {
			return mountRule{external: true, flags: flagsOf(sm.Options), share: share}, true
		}
	}
	return mountRule{}, false
}

// specMountRule is the rule of spec mount sm for the image's entry m;
// share is the root's propagation, which a mount without its own inherits.
func specMountRule(sm specs.Mount, m *mnt.MntEntry, share sharing) mountRule {
	flags := flagsOf(sm.Options)
	if typ, ok := fstypeOf[sm.Type]; ok {
		return mountRule{fstypes: []mnt.Fstype{typ}, flags: flags, root: "/", share: share}
	}
	if sm.Type == "cgroup" || sm.Type == "cgroup2" {
		// v1: a tmpfs holding the controllers' binds (libcontainer makes it
		// read-only after the restore); v2: cgroup2.
		if m.GetExtKey() == "" && fstypeOfEntry(m) == mnt.Fstype_TMPFS {
			flags &^= unix.MS_RDONLY
		}
		return mountRule{fstypes: []mnt.Fstype{mnt.Fstype_TMPFS, mnt.Fstype_CGROUP2}, external: true, flags: flags, share: share}
	}
	// bind mounts: external in the image
	return mountRule{external: true, flags: flags, share: sharingOf(sm.Options, share)}
}

// fstypeOf maps the spec's mount types to CRIU's.
var fstypeOf = map[string]mnt.Fstype{
	"proc": mnt.Fstype_PROC, "sysfs": mnt.Fstype_SYSFS, "devpts": mnt.Fstype_DEVPTS,
	"mqueue": mnt.Fstype_MQUEUE, "tmpfs": mnt.Fstype_TMPFS,
}

// parentOf is the type of the spec mount a read-only path lies in (proc
// for /proc/sys) and the path within it ("/sys").
func parentOf(mp string, spec *specs.Spec) (mnt.Fstype, string) {
	best := ""
	for _, sm := range spec.Mounts {
		if strings.HasPrefix(mp, sm.Destination+"/") && len(sm.Destination) > len(best) {
			best = sm.Destination
		}
	}
	for _, sm := range spec.Mounts {
		if sm.Destination == best {
			return fstypeOf[sm.Type], strings.TrimPrefix(mp, best)
		}
	}
	return mnt.Fstype_UNSUPPORTED, mp
}
