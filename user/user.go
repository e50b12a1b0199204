package user

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// This file resolves the container's user the way containerd's CRI plugin
// does (pkg/oci WithUser/WithUserID/WithUsername/WithAdditionalGIDs and
// internal/cri/opts WithAdditionalGIDs/WithSupplementalGroups).

// GroupsPolicy is the CRI's policy for the image's groups.
type GroupsPolicy int

// Merge adds the groups the image's /etc/group gives the user; Strict does not.
const (
	GroupsMerge GroupsPolicy = iota
	GroupsStrict
)

// Request is what a container asks of its process's identity (the user
// fields of its LinuxContainerSecurityContext).
type Request struct {
	RunAsUser                *int64
	RunAsGroup               *int64
	RunAsUsername            string
	SupplementalGroups       []int64
	SupplementalGroupsPolicy GroupsPolicy
}

// generateUserString mirrors containerd's util.GenerateUserString: the
// user name wins over the uid, and a group needs a user.
func generateUserString(username string, uid, gid *int64) (string, error) {
	var userstr, groupstr string
	if uid != nil {
		userstr = strconv.FormatInt(*uid, 10)
	}
	if username != "" {
		userstr = username
	}
	if gid != nil {
		groupstr = strconv.FormatInt(*gid, 10)
	}
	if userstr == "" {
		if groupstr != "" {
			return "", fmt.Errorf("%w: user group %q is specified without user", errdefs.ErrInvalid, groupstr)
		}
		return "", nil
	}
	if groupstr != "" {
		userstr += ":" + groupstr
	}
	return userstr, nil
}

// Resolve returns the process user: uid, gid and additional gids, the
// request's over imageUser (the image's USER), names looked up in rootfs.
func Resolve(rootfs string, req *Request, imageUser string) (specs.User, error) {
	var u specs.User

	userstr, err := generateUserString(req.RunAsUsername, req.RunAsUser, req.RunAsGroup)
	if err != nil {
		return u, err
	}
	if userstr == "" {
		// No user override via CRI: use the image's.
		userstr = imageUser
	}
	if userstr != "" {
		if err := resolveUser(rootfs, userstr, &u); err != nil {
			return u, err
		}
		u.AdditionalGids = []uint32{u.GID}
	}

	switch req.SupplementalGroupsPolicy {
	case GroupsMerge:
		// The user whose /etc/group memberships are merged in.
		addUser := "0"
		switch {
		case req.RunAsUsername != "":
			addUser = req.RunAsUsername
		case req.RunAsUser != nil:
			addUser = strconv.FormatInt(*req.RunAsUser, 10)
		case imageUser != "":
			addUser, _, _ = strings.Cut(imageUser, ":")
		}
		gids, err := imageGroupsOf(rootfs, addUser)
		if err != nil {
			return u, err
		}
		if !slices.Contains(gids, u.GID) {
			gids = append([]uint32{u.GID}, gids...)
		}
		u.AdditionalGids = mergeGids(gids, u.AdditionalGids)
	case GroupsStrict:
	default:
		return u, fmt.Errorf("%w: unknown supplemental groups policy %d", errdefs.ErrInvalid, req.SupplementalGroupsPolicy)
	}

	var sup []uint32
	for _, g := range req.SupplementalGroups {
		if g < 0 || g > math.MaxUint32 {
			return u, fmt.Errorf("%w: supplemental group %d out of range", errdefs.ErrInvalid, g)
		}
		sup = append(sup, uint32(g))
	}
	u.AdditionalGids = mergeGids(u.AdditionalGids, sup)
	return u, nil
}

// mergeGids returns the sorted union of two gid lists.
func mergeGids(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
