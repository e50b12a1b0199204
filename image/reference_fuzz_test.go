package image

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// The grammar of a normalised reference, from the distribution spec's
// reference grammar (github.com/distribution/reference, which containerd
// and the kubelet use): what NormalizeReference returns must match it.
var (
	refDomainRE = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	refPathRE   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	refTagRE    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
)

// FuzzNormalizeReference: an image reference from a request never panics
// the parser; a rejection wraps ErrInvalidReference; an accepted reference
// normalises to a canonical form that is valid under the reference grammar
// (no "..", empty or "." path elements that would reach other registry
// paths or config directories), parses to the same parts, and normalises
// to itself.
func FuzzNormalizeReference(f *testing.F) {
	for _, s := range []string{
		"busybox", "busybox:1.36", "docker.io/busybox", "index.docker.io/library/busybox",
		"user/app:v1", "registry.k8s.io/pause:3.10", "localhost:5000/a/b", "127.0.0.1:5000/a/b:c",
		"[::1]:5000/app:v1", "busybox@sha256:" + strings.Repeat("a", 64),
		"busybox:1.36@sha256:" + strings.Repeat("b", 64), "gcr.io/k8s-staging-cri-tools/test-image-latest",
		"quay.io/a_b/c__d/e--f.g:1.0-rc_1", "Busybox", "busybox@sha256:abc", "a b", "busybox:", ":tag",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		norm, err := NormalizeReference(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidReference) {
				t.Fatalf("NormalizeReference(%q): error %v does not wrap ErrInvalidReference", in, err)
			}
			return
		}
		r, err := parseReference(norm)
		if err != nil {
			t.Fatalf("NormalizeReference(%q) = %q, which does not parse: %v", in, norm, err)
		}
		if got := r.String(); got != norm {
			t.Fatalf("NormalizeReference(%q) = %q, but it parses back to %q", in, norm, got)
		}
		again, err := NormalizeReference(norm)
		if err != nil || again != norm {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, norm, again, err)
		}
		if !refDomainRE.MatchString(r.Registry) {
			t.Fatalf("NormalizeReference(%q) = %q: registry %q is not a host[:port]", in, norm, r.Registry)
		}
		if !refPathRE.MatchString(r.Repo) {
			t.Fatalf("NormalizeReference(%q) = %q: repository %q is not a valid path", in, norm, r.Repo)
		}
		switch {
		case r.Digest != "" && r.Tag != "":
			t.Fatalf("NormalizeReference(%q) = %q: both a tag and a digest", in, norm)
		case r.Digest != "" && !isSHA256Digest(r.Digest):
			t.Fatalf("NormalizeReference(%q) = %q: bad digest %q", in, norm, r.Digest)
		case r.Digest == "" && !refTagRE.MatchString(r.Tag):
			t.Fatalf("NormalizeReference(%q) = %q: bad tag %q", in, norm, r.Tag)
		}
	})
}
