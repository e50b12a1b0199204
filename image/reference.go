package image

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHub is the canonical name of Docker Hub in image references, as
// containerd and the kubelet spell it.
const dockerHub = "docker.io"

// reference is a normalised image reference: docker.io/library/busybox:latest
// or registry.k8s.io/pause@sha256:....
type reference struct {
	Registry string // host[:port]; "docker.io" for Docker Hub
	Repo     string // path within the registry, e.g. library/busybox
	Tag      string // empty for digest references
	Digest   string // "sha256:..." for digest references
}

// Name is registry/repo.
func (r reference) Name() string { return r.Registry + "/" + r.Repo }

// String is the canonical form: name:tag or name@digest.
func (r reference) String() string {
	if r.Digest != "" {
		return r.Name() + "@" + r.Digest
	}
	return r.Name() + ":" + r.Tag
}

// NormalizeReference returns the canonical form of an image reference:
// "busybox" is "docker.io/library/busybox:latest", "user/app@sha256:..." is
// "docker.io/user/app@sha256:...". A reference with both a tag and a digest
// keeps only the digest, as containerd does.
func NormalizeReference(ref string) (string, error) {
	r, err := parseReference(ref)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func parseReference(s string) (reference, error) {
	orig := s
	if s == "" || strings.TrimSpace(s) != s {
		return reference{}, fmt.Errorf("%w: %q", ErrInvalidReference, orig)
	}
	var digest string
	if i := strings.Index(s, "@"); i >= 0 {
		digest = s[i+1:]
		s = s[:i]
		// Drop a tag in "name:tag@digest": the digest wins.
		if j := strings.LastIndex(s, ":"); j > strings.LastIndex(s, "/") {
			s = s[:j]
		}
		if !isSHA256Digest(digest) {
			return reference{}, fmt.Errorf("%w: %q: bad digest", ErrInvalidReference, orig)
		}
	}
	var r name.Reference
	var err error
	if digest != "" {
		r, err = name.NewDigest(s+"@"+digest, name.WeakValidation)
	} else {
		r, err = name.NewTag(s, name.WeakValidation)
	}
	if err != nil {
		return reference{}, fmt.Errorf("%w: %q: %v", ErrInvalidReference, orig, err)
	}
	out := reference{
		Registry: r.Context().RegistryStr(),
		Repo:     r.Context().RepositoryStr(),
	}
	if out.Registry == name.DefaultRegistry {
		out.Registry = dockerHub
	}
	if digest != "" {
		out.Digest = digest
	} else {
		out.Tag = r.Identifier()
	}
	return out, nil
}

func isSHA256Digest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	return ok && isHex(hex) && len(hex) == 64
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
