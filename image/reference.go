package image

import (
	"fmt"
	"strings"

	dref "github.com/distribution/reference"
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

// parseReference parses a reference the way containerd does
// (github.com/distribution/reference ParseDockerRef): the whole normalised
// name must match the reference grammar, so no path element is empty, "."
// or "..", the registry is a host[:port], the tag matches [\w][\w.-]{0,127}
// and the normalised name is at most 255 characters. The registry and the
// repository are used as paths (certs.d/<registry>/hosts.toml, the
// registry's /v2/<repo>/ URLs): nothing outside the grammar may get there.
func parseReference(s string) (reference, error) {
	orig := s
	if s == "" || strings.TrimSpace(s) != s {
		return reference{}, fmt.Errorf("%w: %q", ErrInvalidReference, orig)
	}
	named, err := dref.ParseNormalizedNamed(s)
	if err != nil {
		return reference{}, fmt.Errorf("%w: %q: %v", ErrInvalidReference, orig, err)
	}
	out := reference{Registry: dref.Domain(named), Repo: dref.Path(named)}
	if out.Registry == "" {
		// "0.00_0/00": a first element that looks like a host (it has a
		// dot) but is none parses as a bare path with no registry at all.
		return reference{}, fmt.Errorf("%w: %q: no registry", ErrInvalidReference, orig)
	}
	switch r := named.(type) {
	case dref.Digested:
		// A tag next to a digest is dropped: the digest wins.
		d := r.Digest().String()
		if !isSHA256Digest(d) {
			return reference{}, fmt.Errorf("%w: %q: bad digest", ErrInvalidReference, orig)
		}
		out.Digest = d
	case dref.Tagged:
		out.Tag = r.Tag()
	default:
		out.Tag = "latest"
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
