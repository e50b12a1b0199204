package image

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestArtifactTypeOf(t *testing.T) {
	for _, tc := range []struct {
		config types.MediaType
		atype  string
		want   string
	}{
		{types.OCIConfigJSON, "", ""},
		{types.DockerConfigJSON, "", ""},
		{"", "", ""},
		{types.OCIConfigJSON, "application/x-model", "application/x-model"},
		{types.OCIEmptyJSON, "application/x-model", "application/x-model"},
		{types.OCIEmptyJSON, "", string(types.OCIEmptyJSON)},
		{"application/vnd.cncf.helm.config.v1+json", "", "application/vnd.cncf.helm.config.v1+json"},
	} {
		m := &v1.Manifest{Config: v1.Descriptor{MediaType: tc.config}, ArtifactType: tc.atype}
		if got := artifactTypeOf(m); got != tc.want {
			t.Errorf("config %q artifactType %q: %q, want %q", tc.config, tc.atype, got, tc.want)
		}
	}
}

func titled(names ...string) []v1.Descriptor {
	var out []v1.Descriptor
	for _, n := range names {
		d := v1.Descriptor{}
		if n != "" {
			d.Annotations = map[string]string{annotationTitle: n}
		}
		out = append(out, d)
	}
	return out
}

func TestArtifactFilesContainHostileTitles(t *testing.T) {
	files, err := artifactFiles(append(titled("../../etc/evil", "/abs/x", "a/./b/../c", ""),
		v1.Descriptor{Annotations: map[string]string{annotationModelFilepath: "model/w.bin"}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if strings.Join(got, " ") != "etc/evil abs/x a/c model/w.bin" {
		t.Fatalf("paths %v", got)
	}
	for _, bad := range [][]string{
		{"."}, {"/"}, {"../.."}, {"a", "./a"}, {"a", "a/b"}, {"a/b", "a"}, {"x\x00y"},
		{strings.Repeat("n", maxNameLen+1)}, {strings.Repeat("d/", maxArtifactPath/2+1) + "f"},
	} {
		if _, err := artifactFiles(titled(bad...)); !errors.Is(err, ErrBadArtifact) {
			t.Errorf("%q: %v, want ErrBadArtifact", bad, err)
		}
	}
}
