package ocirt

import (
	"slices"
	"testing"
)

func TestWithBundle(t *testing.T) {
	got := withBundle([]string{"bundle=/from/annotation", "a=b", "bundle=/daemon/cwd"}, "/state/ctr")
	if want := []string{"a=b", "bundle=/state/ctr"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
