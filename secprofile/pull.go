package secprofile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/image"
)

// Kind is the kind of profile a pull expects (the CRI's
// SecurityProfileKind).
type Kind int

// KindSeccomp is the only kind this store holds.
const KindSeccomp Kind = 1

// maxRef bounds a pulled reference (and so every message that quotes it).
const maxRef = 1024

// Pull stores the profile ref pins (a digest reference, the CRI's
// image.image) unless it is present, in which case it adds ref to its
// refs and answers cached with no registry request. auth may be nil.
func (s *Store) Pull(ctx context.Context, ref string, auth *image.AuthConfig, kind Kind) (cached bool, err error) {
	if kind != KindSeccomp {
		return false, invalidf("profile kind %d is not supported (only Seccomp)", kind)
	}
	if len(ref) > maxRef {
		// Before any message quotes it: a reference is bounded by the
		// distribution grammar (a name of at most 255 bytes and a digest).
		return false, invalidf("a reference of %d bytes is not valid (at most %d)", len(ref), maxRef)
	}
	canonical, digest, err := image.DigestReference(ref)
	if err != nil {
		return false, invalidf("%v", err)
	}
	if digest == "" {
		return false, invalidf("%q is not pinned by a digest (name@sha256:...)", ref)
	}
	if ok, err := s.addRef(ref, digest); ok || err != nil {
		return ok, err
	}
	art, err := s.reg.FetchSmallArtifact(ctx, canonical, auth, MaxManifest, MaxProfile, chooseLayer)
	if err != nil {
		return false, classify(err)
	}
	if _, err := Parse(art.Blob); err != nil {
		return false, fmt.Errorf("%w (%s)", err, canonical)
	}
	if err := ctx.Err(); err != nil {
		return false, err // the caller gave up: nothing is stored
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.put(art.BlobDigest, art.Blob, ref, digest); err != nil {
		return false, err
	}
	s.log.Info("pulled security profile", "ref", canonical, "digest", art.BlobDigest, "size", len(art.Blob))
	return false, nil
}

// addRef answers a pull from the store: true if a stored profile was
// pinned by manifest digest (or pulled by ref), which then lists ref.
func (s *Store) addRef(ref, manifest string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.find(ref, manifest)
	if rec == nil {
		return false, nil
	}
	if slices.Contains(rec.Refs, ref) && slices.Contains(rec.Pinned, manifest) {
		return true, nil
	}
	next := &Info{Digest: rec.Digest, Size: rec.Size,
		Refs: addBounded(slices.Clone(rec.Refs), ref), Pinned: addBounded(slices.Clone(rec.Pinned), manifest)}
	return true, s.writeRecord(next)
}

// find is the record pulled by ref, or by a ref pinning manifest; called
// with s.mu held.
func (s *Store) find(ref, manifest string) *Info {
	for _, r := range s.records {
		if slices.Contains(r.Refs, ref) || (manifest != "" && slices.Contains(r.Pinned, manifest)) {
			return r
		}
	}
	return nil
}

// classify gives a registry error its well-known prefix.
func classify(err error) error {
	switch {
	case errors.Is(err, ErrInvalid):
		// The refusal came back wrapped ("fetch <ref>: ..."): the
		// well-known message goes first again.
		if strings.HasPrefix(err.Error(), ErrInvalid.Error()) {
			return err
		}
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Replace(err.Error(), ErrInvalid.Error()+": ", "", 1))
	case errors.Is(err, image.ErrRegistryUnavailable):
		return fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
	case errors.Is(err, image.ErrBadArtifact), errors.Is(err, image.ErrInvalidReference):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// Lookup resolves an oci_ref to a stored profile, never pulling: a ref a
// pull named, or any ref pinning a manifest digest a pull resolved (the
// digest pins the manifest, so its layer is the same profile). It returns
// the profile's digest and its filter.
func (s *Store) Lookup(ref string) (string, *specs.LinuxSeccomp, error) {
	_, manifest, err := image.DigestReference(ref)
	if err != nil {
		manifest = ""
	}
	s.mu.Lock()
	rec := s.find(ref, manifest)
	var data []byte
	if rec != nil {
		data, err = os.ReadFile(s.profilePath(rec.Digest))
	}
	s.mu.Unlock()
	if rec == nil {
		return "", nil, fmt.Errorf("%w: %.300q was not pulled (PullSecurityProfile pulls it; a create never does)", ErrNotPresent, ref)
	}
	if err != nil {
		return "", nil, fmt.Errorf("security profile %s: %w", rec.Digest, err)
	}
	p, err := Parse(data)
	if err != nil {
		return "", nil, fmt.Errorf("stored security profile %s: %w", rec.Digest, err)
	}
	return rec.Digest, p, nil
}
