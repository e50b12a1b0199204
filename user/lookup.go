package user

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	sysuser "github.com/moby/sys/user"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// maxUserFileBytes caps how much of the image's /etc/passwd or /etc/group is
// read (containerd uses the same limit).
const maxUserFileBytes = 10 << 20

var (
	errNoUsersFound  = errors.New("no users found")
	errNoGroupsFound = errors.New("no groups found")
)

// maxID is the largest uid or gid accepted: runc's limit, which containerd
// follows.
const maxID = math.MaxInt32

// imageID checks an id read from the image's /etc/passwd or /etc/group: the
// parser accepts any int there, and a hostile image must not turn
// 4294967296 into uid 0 or -1 into 4294967295 by wrapping.
func imageID(v int, file, name string) (uint32, error) {
	if v < 0 || v > maxID {
		return 0, fmt.Errorf("%w: %s entry %q has id %d out of range 0..%d", errdefs.ErrInvalid, file, name, v, maxID)
	}
	return uint32(v), nil
}

// passwdIDs returns the checked uid and gid of an /etc/passwd entry.
func passwdIDs(usr sysuser.User) (uid, gid uint32, err error) {
	if uid, err = imageID(usr.Uid, "/etc/passwd", usr.Name); err != nil {
		return 0, 0, err
	}
	if gid, err = imageID(usr.Gid, "/etc/passwd", usr.Name); err != nil {
		return 0, 0, err
	}
	return uid, gid, nil
}

// resolveUser mirrors containerd's oci.WithUser for a Linux rootfs.
func resolveUser(rootfs, userstr string, u *specs.User) error {
	parts := strings.Split(userstr, ":")
	switch len(parts) {
	case 1:
		return resolveUserOnly(rootfs, userstr, u)
	case 2:
		uid, err := resolveUID(rootfs, userstr, parts[0])
		if err != nil {
			return err
		}
		gid, err := resolveGID(rootfs, userstr, parts[1])
		if err != nil {
			return err
		}
		u.UID, u.GID = uid, gid
		return nil
	default:
		return fmt.Errorf("%w: invalid USER value %q", errdefs.ErrInvalid, userstr)
	}
}

// parseUserID reads one numeric half of a USER value; numeric is false for a
// name.
func parseUserID(userstr, s, what string) (id uint32, numeric bool, err error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, fmt.Errorf("%w: invalid USER value %q: %s out of range", errdefs.ErrInvalid, userstr, what)
		}
		return 0, false, nil // a name
	}
	if v < 0 || v > maxID {
		return 0, false, fmt.Errorf("%w: invalid USER value %q: %s out of range", errdefs.ErrInvalid, userstr, what)
	}
	return uint32(v), true, nil
}

// resolveUserOnly is a USER of a user alone (a name or a uid): its primary
// group comes from the image's /etc/passwd.
func resolveUserOnly(rootfs, userstr string, u *specs.User) error {
	uid, numeric, err := parseUserID(userstr, userstr, "uid")
	if err != nil {
		return err
	}
	if !numeric {
		usr, err := lookupUser(rootfs, func(x sysuser.User) bool { return x.Name == userstr })
		if err != nil {
			return userErr(userstr, err)
		}
		u.UID, u.GID, err = passwdIDs(usr)
		return err
	}
	// A uid: take its primary group from /etc/passwd; gid 0 when the
	// uid (or the file) does not exist.
	usr, err := lookupUser(rootfs, func(x sysuser.User) bool { return x.Uid == int(uid) })
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoUsersFound) {
			u.UID, u.GID = uid, 0
			return nil
		}
		return err
	}
	u.UID, u.GID, err = passwdIDs(usr)
	return err
}

// resolveUID is the user half of a "user:group" USER value.
func resolveUID(rootfs, userstr, name string) (uint32, error) {
	uid, numeric, err := parseUserID(userstr, name, "uid")
	if err != nil || numeric {
		return uid, err
	}
	usr, err := lookupUser(rootfs, func(x sysuser.User) bool { return x.Name == name })
	if err != nil {
		return 0, userErr(userstr, err)
	}
	return imageID(usr.Uid, "/etc/passwd", usr.Name)
}

// resolveGID is the group half of a "user:group" USER value.
func resolveGID(rootfs, userstr, name string) (uint32, error) {
	gid, numeric, err := parseUserID(userstr, name, "gid")
	if err != nil || numeric {
		return gid, err
	}
	grp, err := lookupGroup(rootfs, func(g sysuser.Group) bool { return g.Name == name })
	if err != nil {
		return 0, userErr(userstr, err)
	}
	return imageID(grp.Gid, "/etc/group", grp.Name)
}

// userErr turns a failed name lookup into a bad-request error.
func userErr(userstr string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoUsersFound) || errors.Is(err, errNoGroupsFound) {
		return fmt.Errorf("%w: cannot resolve user %q in the image: %w", errdefs.ErrInvalid, userstr, err)
	}
	return fmt.Errorf("resolve user %q: %w", userstr, err)
}

// imageGroupsOf mirrors containerd's oci.WithAdditionalGIDs: the gids of the
// image's /etc/group entries that list the user (by name) as a member,
// except a group named like the user. userstr is a uid or a user name.
func imageGroupsOf(rootfs, userstr string) ([]uint32, error) {
	username := userstr
	if uid, err := strconv.Atoi(userstr); err == nil {
		usr, err := lookupUser(rootfs, func(x sysuser.User) bool { return x.Uid == uid })
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoUsersFound) {
				return nil, nil
			}
			return nil, err
		}
		username = usr.Name
	}
	groups, err := parseRootfsFile(rootfs, "/etc/group", func(r io.Reader) ([]sysuser.Group, error) {
		return sysuser.ParseGroupFilter(r, func(g sysuser.Group) bool {
			return g.Name != username && slices.Contains(g.List, username)
		})
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	gids := make([]uint32, 0, len(groups))
	for _, g := range groups {
		gid, err := imageID(g.Gid, "/etc/group", g.Name)
		if err != nil {
			return nil, err
		}
		gids = append(gids, gid)
	}
	return gids, nil
}

func lookupUser(rootfs string, filter func(sysuser.User) bool) (sysuser.User, error) {
	users, err := parseRootfsFile(rootfs, "/etc/passwd", func(r io.Reader) ([]sysuser.User, error) {
		return sysuser.ParsePasswdFilter(r, filter)
	})
	if err != nil {
		return sysuser.User{}, err
	}
	if len(users) == 0 {
		return sysuser.User{}, errNoUsersFound
	}
	return users[0], nil
}

func lookupGroup(rootfs string, filter func(sysuser.Group) bool) (sysuser.Group, error) {
	groups, err := parseRootfsFile(rootfs, "/etc/group", func(r io.Reader) ([]sysuser.Group, error) {
		return sysuser.ParseGroupFilter(r, filter)
	})
	if err != nil {
		return sysuser.Group{}, err
	}
	if len(groups) == 0 {
		return sysuser.Group{}, errNoGroupsFound
	}
	return groups[0], nil
}

// parseRootfsFile opens name inside rootfs (symlinks resolved within the
// rootfs), checks it is a regular file and parses at most maxUserFileBytes
// of it.
func parseRootfsFile[T any](rootfs, name string, parse func(io.Reader) ([]T, error)) ([]T, error) {
	p, err := securejoin.SecureJoin(rootfs, name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s in the image is not a regular file", name)
	}
	if st.Size() > maxUserFileBytes {
		return nil, fmt.Errorf("%s in the image exceeds %d bytes", name, maxUserFileBytes)
	}
	return parse(io.LimitReader(f, maxUserFileBytes))
}
