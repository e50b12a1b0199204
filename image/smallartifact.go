package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// A small artifact (a security profile of KEP-6061, say) is fetched with
// the very registry access image pulls use: hosts.toml mirrors, the
// request's credentials, TLS settings, token realms (realm.go), the
// endpoint fall-through of tryEndpoints. Nothing of it goes to the image
// store: its caller keeps what it accepts, so it never shows in ListImages.

// ErrRegistryUnavailable: no endpoint of the registry answered, or each
// answered with a server error (5xx) or 429: worth retrying later.
var ErrRegistryUnavailable = errors.New("registry unavailable")

// SmallArtifact is a digest-pinned manifest and the one blob its caller
// chose from it, both verified against their digests.
type SmallArtifact struct {
	Ref            string // canonical name@digest
	ManifestDigest string
	MediaType      string // the manifest's, as served (or sniffed)
	Manifest       []byte
	BlobDigest     string
	Blob           []byte
}

// ChooseBlob reads a verified manifest and names the one blob to fetch
// (its digest and declared size), or refuses the artifact.
type ChooseBlob func(mediaType string, manifest []byte) (digest string, size int64, err error)

// DigestReference parses ref as PullImage does and returns its canonical
// form and its digest ("" for a reference by tag only).
func DigestReference(ref string) (canonical, digest string, err error) {
	pr, err := parseReference(ref)
	if err != nil {
		return "", "", err
	}
	return pr.String(), pr.Digest, nil
}

// FetchSmallArtifact fetches the manifest ref pins (a digest reference;
// at most maxManifest bytes) and the blob choose picks from it (at most
// maxBlob bytes). auth may be nil. Errors from an unreachable registry or
// its server errors wrap ErrRegistryUnavailable; an unknown manifest or
// blob, ErrNotFound.
func (s *Store) FetchSmallArtifact(ctx context.Context, ref string, auth *AuthConfig, maxManifest, maxBlob int64, choose ChooseBlob) (SmallArtifact, error) {
	pr, err := parseReference(ref)
	if err != nil {
		return SmallArtifact{}, err
	}
	if pr.Digest == "" {
		return SmallArtifact{}, fmt.Errorf("%w: %q is not pinned by a digest", ErrInvalidReference, ref)
	}
	eps, err := loadEndpoints(s.cfg.RegistryConfigPath, pr.Registry)
	if err != nil {
		return SmallArtifact{}, fmt.Errorf("registry hosts for %s: %w", pr.Registry, err)
	}
	repo, err := name.NewRepository(placeholderHost+"/"+pr.Repo, name.WeakValidation)
	if err != nil {
		return SmallArtifact{}, fmt.Errorf("%w: %q: %v", ErrInvalidReference, ref, err)
	}
	p := &puller{s: s, ref: pr, repo: repo, eps: eps, auth: auth, prog: newPullProgress(),
		lim: s.newPullLimits(), clients: map[int]*remote.Puller{}, dead: map[int]bool{}}
	out, err := p.fetchSmall(ctx, maxManifest, maxBlob, choose)
	if err != nil {
		if unavailable(err) {
			err = fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
		}
		return SmallArtifact{}, sanitizedError(fmt.Errorf("fetch %s: %w", pr.String(), err), 4*maxRemoteText)
	}
	return out, nil
}

func (p *puller) fetchSmall(ctx context.Context, maxManifest, maxBlob int64, choose ChooseBlob) (SmallArtifact, error) {
	out := SmallArtifact{Ref: p.ref.String(), ManifestDigest: p.ref.Digest}
	err := p.tryEndpoints(ctx, capPull, "manifest", func(_ int, cl *remote.Puller) error {
		desc, err := cl.Get(ctx, p.repo.Digest(p.ref.Digest))
		if err != nil {
			return err
		}
		if int64(len(desc.Manifest)) > maxManifest {
			return &imageFault{fmt.Errorf("%w: manifest of %d bytes, at most %d", ErrBadArtifact, len(desc.Manifest), maxManifest)}
		}
		if got := sha256Digest(desc.Manifest); got != p.ref.Digest {
			return fmt.Errorf("manifest digest mismatch: got %s, want %s", got, p.ref.Digest)
		}
		out.Manifest, out.MediaType = desc.Manifest, string(sniffMediaType(desc.MediaType, desc.Manifest))
		return nil
	})
	if err != nil {
		return SmallArtifact{}, err
	}
	digest, size, err := choose(out.MediaType, out.Manifest)
	if err != nil {
		return SmallArtifact{}, err
	}
	h, err := v1.NewHash(digest)
	if err != nil || h.Algorithm != "sha256" || size < 0 || size > maxBlob {
		return SmallArtifact{}, fmt.Errorf("%w: blob %.80q of %d bytes: a sha256 digest and at most %d bytes are required", ErrBadArtifact, digest, size, maxBlob)
	}
	out.BlobDigest = digest
	err = p.tryEndpoints(ctx, capPull, "blob "+digest, func(_ int, cl *remote.Puller) error {
		rc, err := p.openBlob(ctx, cl, h)
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(&ctxReader{ctx: ctx, r: rc}, size+1))
		if err != nil {
			return err
		}
		if int64(len(data)) != size {
			return &imageFault{fmt.Errorf("%w: blob %s: got %d bytes or more, the manifest says %d", ErrBadArtifact, digest, len(data), size)}
		}
		if got := sha256Digest(data); got != digest {
			return fmt.Errorf("blob digest mismatch: got %s, want %s", got, digest)
		}
		out.Blob = data
		return nil
	})
	return out, err
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// unavailable: the registry could not be reached, or answered with a
// server error or 429 (Too Many Requests).
func unavailable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode >= http.StatusInternalServerError || te.StatusCode == http.StatusTooManyRequests
	}
	var oe *net.OpError
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &oe) || errors.As(err, &ue) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}
