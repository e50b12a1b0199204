package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/cgroup"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/inventory"
	"google.golang.org/protobuf/proto"
)

// checkCheckpointCgroups refuses a checkpoint whose cgroup image
// (cgroup.img) places a task outside the dumped container's cgroups. CRIU
// joins the image's paths to its own mount of each hierarchy and writes
// there as root: a ".." climbs out into the host's file system
// ("/../../sys/fs/cgroup/devices": the host's root cgroup, every device),
// and a path beside the root task's is another cgroup than the
// container's. Every path must be clean and lie within the root task's
// path of its controller (which CRIU maps onto the new container's).
func (c *creation) checkCheckpointCgroups(context.Context) error {
	return checkCgroupsIn(filepath.Join(c.m.ctrStateDir(c.rec.ID), checkpointImagesDir))
}

func checkCgroupsIn(images string) error {
	var inv inventory.InventoryEntry
	if err := readOneEntry(filepath.Join(images, "inventory.img"), &inv); err != nil {
		return fmt.Errorf("%w: checkpoint image inventory.img: %v", ErrInvalid, err)
	}
	var cg cgroup.CgroupEntry
	err := readOneEntry(filepath.Join(images, "cgroup.img"), &cg)
	if os.IsNotExist(err) {
		return nil // CRIU then leaves the tasks where libcontainer put it
	}
	if err != nil {
		return fmt.Errorf("%w: checkpoint image cgroup.img: %v", ErrInvalid, err)
	}
	if err := checkCgroupEntry(&cg, inv.GetRootCgSet()); err != nil {
		return fmt.Errorf("%w: checkpoint cgroup image: %v", ErrFailedPrecondition, err)
	}
	return nil
}

func checkCgroupEntry(cg *cgroup.CgroupEntry, rootSet uint32) error {
	i := slices.IndexFunc(cg.GetSets(), func(s *cgroup.CgSetEntry) bool { return s.GetId() == rootSet })
	if i < 0 {
		return fmt.Errorf("no root cgroup set %d", rootSet)
	}
	root := map[string]string{}
	for _, m := range cg.GetSets()[i].GetCtls() {
		if !cleanCgroupPath(m.GetPath()) {
			return fmt.Errorf("cgroup path %q of %s", m.GetPath(), m.GetName())
		}
		root[m.GetName()] = m.GetPath()
	}
	for _, s := range cg.GetSets() {
		for _, m := range s.GetCtls() {
			r, ok := root[m.GetName()]
			p := m.GetPath()
			if !ok || !cleanCgroupPath(p) || (p != r && !strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/")) {
				return fmt.Errorf("cgroup path %q of %s is outside the container's %q", p, m.GetName(), r)
			}
		}
	}
	for _, ctl := range cg.GetControllers() {
		if err := checkCgroupDirs(ctl.GetDirs()); err != nil {
			return err
		}
	}
	return nil
}

// checkCgroupDirs refuses a cgroup directory name with a ".." in it.
func checkCgroupDirs(dirs []*cgroup.CgroupDirEntry) error {
	for _, d := range dirs {
		if !cleanCgroupPath("/" + d.GetDirName()) {
			return fmt.Errorf("cgroup directory %q", d.GetDirName())
		}
		if err := checkCgroupDirs(d.GetChildren()); err != nil {
			return err
		}
	}
	return nil
}

// cleanCgroupPath: absolute, clean, no "..".
func cleanCgroupPath(p string) bool {
	return strings.HasPrefix(p, "/") && filepath.Clean(p) == p && !slices.Contains(strings.Split(p, "/"), "..")
}

// readOneEntry decodes the one entry of a CRIU image into msg.
func readOneEntry(path string, msg proto.Message) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	img, err := crit.New(f, nil, "", false, true).Decode(msg.ProtoReflect().New().Interface())
	if err != nil {
		return err
	}
	if len(img.Entries) != 1 {
		return fmt.Errorf("%d entries", len(img.Entries))
	}
	proto.Merge(msg, img.Entries[0].Message)
	return nil
}
