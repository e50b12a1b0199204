package monitor

import (
	"strconv"

	"github.com/minicri/minicri/internal/idmap"
)

// pauseIDArgs are the pause's -u (UID), -g (GID) and -G (supplementary
// group) arguments: the pod's run_as_user, run_as_group and supplemental
// groups when it gives them, else the pause image's 65535 where it is
// mapped (in a pod user namespace too short for it, the pause stays the
// namespace's root, without any capability) and no groups.
func pauseIDArgs(p Pause) []string {
	uid, gid := int64(-1), int64(-1)
	if u := p.UserNS; u == nil || (idmap.Mapped(u.UIDs, pauseID) && idmap.Mapped(u.GIDs, pauseID)) {
		uid, gid = pauseID, pauseID
	}
	if p.RunAsUser != nil {
		uid = *p.RunAsUser
	}
	if p.RunAsGroup != nil {
		gid = *p.RunAsGroup
	}
	var args []string
	if uid >= 0 {
		args = append(args, "-u", strconv.FormatInt(uid, 10))
	}
	if gid >= 0 {
		args = append(args, "-g", strconv.FormatInt(gid, 10))
	}
	for _, g := range p.Groups {
		args = append(args, "-G", strconv.FormatInt(g, 10))
	}
	return args
}
