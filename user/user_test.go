package user

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minicri/minicri/internal/errdefs"
)

func i64(v int64) *int64 { return &v }

// testRootfs is a fake rootfs with an /etc/passwd and an /etc/group, to
// read only.
func testRootfs(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("testdata", "rootfs"))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantInvalid(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want one wrapping ErrInvalid")
	}
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("error %q does not wrap ErrInvalid", err)
	}
}

func TestBuildUser(t *testing.T) {
	tests := []struct {
		name      string
		sec       Request
		imageUser string
		uid, gid  uint32
		gids      []uint32
		invalid   bool
	}{
		// Merge (the default) adds the /etc/group memberships of the user.
		{name: "default root", uid: 0, gid: 0, gids: []uint32{0, 10}},
		{name: "image uid", imageUser: "1000", uid: 1000, gid: 1000, gids: []uint32{10, 1000, 50000}},
		{name: "image name", imageUser: "alice", uid: 1000, gid: 1000, gids: []uint32{10, 1000, 50000}},
		{name: "image name:group", imageUser: "alice:staff", uid: 1000, gid: 50, gids: []uint32{10, 50, 50000}},
		{name: "image uid:gid", imageUser: "1001:7", uid: 1001, gid: 7, gids: []uint32{7, 50}},
		{name: "image uid:group", imageUser: "1001:wheel", uid: 1001, gid: 10, gids: []uint32{10, 50}},
		{name: "image uid not in passwd", imageUser: "5000", uid: 5000, gid: 0, gids: []uint32{0}},
		{name: "image missing user", imageUser: "nobody", invalid: true},
		{name: "image missing group", imageUser: "alice:nogroup", invalid: true},
		{name: "image bad format", imageUser: "a:b:c", invalid: true},
		{name: "image uid out of range", imageUser: "4294967296", invalid: true},
		{name: "run as user overrides image", sec: Request{RunAsUser: i64(1000)}, imageUser: "bob", uid: 1000, gid: 1000, gids: []uint32{10, 1000, 50000}},
		{name: "run as user and group", sec: Request{RunAsUser: i64(1000), RunAsGroup: i64(50)}, uid: 1000, gid: 50, gids: []uint32{10, 50, 50000}},
		{name: "run as username", sec: Request{RunAsUsername: "bob"}, imageUser: "alice", uid: 1001, gid: 1001, gids: []uint32{50, 1001}},
		{name: "run as username wins over uid", sec: Request{RunAsUsername: "bob", RunAsUser: i64(1000)}, uid: 1001, gid: 1001, gids: []uint32{50, 1001}},
		{name: "run as username and group", sec: Request{RunAsUsername: "bob", RunAsGroup: i64(3)}, uid: 1001, gid: 3, gids: []uint32{3, 50}},
		{name: "run as missing username", sec: Request{RunAsUsername: "nobody"}, invalid: true},
		{name: "run as group without user", sec: Request{RunAsGroup: i64(5)}, imageUser: "alice", invalid: true},
		{name: "run as negative uid", sec: Request{RunAsUser: i64(-1)}, invalid: true},
		{name: "merge with supplemental groups", sec: Request{RunAsUser: i64(1000), SupplementalGroups: []int64{1234}}, uid: 1000, gid: 1000, gids: []uint32{10, 1000, 1234, 50000}},
		// Strict: the primary group and the supplemental groups only.
		{name: "strict", sec: Request{RunAsUser: i64(1000), SupplementalGroups: []int64{1234}, SupplementalGroupsPolicy: GroupsStrict}, uid: 1000, gid: 1000, gids: []uint32{1000, 1234}},
		{name: "strict image user", sec: Request{SupplementalGroupsPolicy: GroupsStrict}, imageUser: "alice", uid: 1000, gid: 1000, gids: []uint32{1000}},
		{name: "strict no user", sec: Request{SupplementalGroupsPolicy: GroupsStrict}, uid: 0, gid: 0, gids: nil},
		{name: "strict no user with groups", sec: Request{SupplementalGroupsPolicy: GroupsStrict, SupplementalGroups: []int64{5, 3, 5}}, uid: 0, gid: 0, gids: []uint32{3, 5}},
		{name: "bad supplemental group", sec: Request{SupplementalGroups: []int64{-2}}, invalid: true},
		{name: "unknown policy", sec: Request{SupplementalGroupsPolicy: GroupsPolicy(7)}, invalid: true},
	}
	rootfs := testRootfs(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Resolve(rootfs, &tt.sec, tt.imageUser)
			if tt.invalid {
				wantInvalid(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.UID != tt.uid || u.GID != tt.gid || !slices.Equal(u.AdditionalGids, tt.gids) {
				t.Fatalf("user = %d:%d %v, want %d:%d %v", u.UID, u.GID, u.AdditionalGids, tt.uid, tt.gid, tt.gids)
			}
		})
	}
}

func TestBuildUserNoPasswd(t *testing.T) {
	rootfs := t.TempDir()
	u, err := Resolve(rootfs, &Request{}, "1000")
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != 1000 || u.GID != 0 || !slices.Equal(u.AdditionalGids, []uint32{0}) {
		t.Fatalf("user = %+v", u)
	}
	_, err = Resolve(rootfs, &Request{}, "alice")
	wantInvalid(t, err)
}

// The rootfs's files are read inside the rootfs, even through an absolute
// symlink.
func TestBuildUserSymlinkInRootfs(t *testing.T) {
	rootfs := t.TempDir()
	writeFile(t, filepath.Join(rootfs, "real/passwd"), "carol:x:2000:2000::/:/bin/sh\n")
	writeFile(t, filepath.Join(rootfs, "real/group"), "grp:x:3000:carol\n")
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/real/passwd", filepath.Join(rootfs, "etc/passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../real/group", filepath.Join(rootfs, "etc/group")); err != nil {
		t.Fatal(err)
	}
	u, err := Resolve(rootfs, &Request{}, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != 2000 || u.GID != 2000 || !slices.Equal(u.AdditionalGids, []uint32{2000, 3000}) {
		t.Fatalf("user = %+v", u)
	}
}

// A hostile image's /etc/passwd or /etc/group may give a name an id beyond
// uint32 or below 0: converted unchecked, 4294967296 wraps to uid 0 (root) and
// -1 to 4294967295. Such ids are refused, as numeric USER values are.
func TestBuildUserImageIDOutOfRange(t *testing.T) {
	rootfs := t.TempDir()
	writeFile(t, filepath.Join(rootfs, "etc/passwd"),
		"wrap:x:4294967296:1000::/:/bin/sh\n"+
			"wrapgid:x:1000:4294967296::/:/bin/sh\n"+
			"neg:x:-1:1000::/:/bin/sh\n"+
			"big:x:2147483648:1000::/:/bin/sh\n"+
			"ok:x:1000:1000::/:/bin/sh\n"+
			"okgid:x:1000:1000::/:/bin/sh\n")
	writeFile(t, filepath.Join(rootfs, "etc/group"),
		"wrapgrp:x:4294967296:\n"+
			"neggrp:x:-5:\n"+
			"member:x:4294967297:ok\n"+
			"fine:x:20:\n")
	for _, tt := range []struct {
		name string
		sec  Request
		user string
	}{
		{name: "uid wraps to 0", user: "wrap"},
		{name: "gid wraps to 0", user: "wrapgid"},
		{name: "negative uid", user: "neg"},
		{name: "uid above MaxInt32", user: "big"},
		{name: "name:group with wrapping uid", user: "wrap:fine"},
		{name: "group wraps to 0", user: "1000:wrapgrp"},
		{name: "negative group", user: "1000:neggrp"},
		{name: "uid looked up by number with wrapping gid", user: "1000", sec: Request{SupplementalGroupsPolicy: GroupsStrict}},
		{name: "merged membership wraps to gid 1", user: "ok"},
		{name: "run as username wraps", sec: Request{RunAsUsername: "wrap"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Resolve(rootfs, &tt.sec, tt.user)
			if err == nil {
				t.Fatalf("user %q resolved to %+v, want an error", tt.user, u)
			}
			wantInvalid(t, err)
		})
	}
}
