package container

import (
	"slices"
	"testing"
)

func i64(v int64) *int64 { return &v }

func TestBuildSpecUser(t *testing.T) {
	in := testInput(t)
	in.Image.User = "alice"
	in.Config.Security.SupplementalGroups = []int64{1234}
	s := mustBuild(t, in)
	u := s.Process.User
	if u.UID != 1000 || u.GID != 1000 || !slices.Equal(u.AdditionalGids, []uint32{10, 1000, 1234, 50000}) {
		t.Fatalf("user = %+v", u)
	}
	in.Image.User = "ghost"
	_, err := BuildSpec(in)
	wantInvalid(t, err)
}
