package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// An artifact volume's files are hard links to blobs of the node's store,
// and a blob is in the store because some pull fetched it, maybe another
// tenant's, with credentials. A manifest is anyone's to write: naming a
// private blob's digest must not be enough to read it. As the kubelet
// treats an image pulled with credentials (KEP-2535: present on the node
// is not authorized; the pull's own credentials must be verified against
// the registry), a blob in the store is linked into a pull's volume only
// once this pull's registry, with this pull's credentials, serves it: a
// HEAD of the blob in the pull's repository, of its declared size. A blob
// this pull downloaded itself needs nothing more.

// verifyStoredBlobs verifies each file's blob that the store holds and
// that neither this pull fetched nor done lists; it returns the digests
// verified (with done's).
func (p *puller) verifyStoredBlobs(ctx context.Context, files []artifactFile, done map[string]bool) (map[string]bool, error) {
	out := map[string]bool{}
	for d := range done {
		out[d] = true
	}
	for _, f := range files {
		dg := f.Desc.Digest.String()
		if out[dg] || p.wasFetched(dg) || !exists(p.s.blobPath(dg)) {
			continue
		}
		if err := p.verifyBlob(ctx, f.Desc); err != nil {
			return nil, fmt.Errorf("artifact file %q: blob %s is on the node, but this pull's registry does not serve it: %w", f.Path, dg, err)
		}
		out[dg] = true
	}
	return out, nil
}

// verifyBlob asks the pull's registry for blob d's size (HEAD).
func (p *puller) verifyBlob(ctx context.Context, d v1.Descriptor) error {
	return p.tryEndpoints(ctx, capPull, "blob "+d.Digest.String(), func(_ int, cl *remote.Puller) error {
		l, err := cl.Layer(ctx, p.repo.Digest(d.Digest.String()))
		if err != nil {
			return err
		}
		n, err := l.Size()
		if err != nil {
			return err
		}
		if n != d.Size {
			return fmt.Errorf("the registry's blob has %d bytes, the manifest says %d", n, d.Size)
		}
		return nil
	})
}

func (p *puller) markFetched(digest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fetched == nil {
		p.fetched = map[string]bool{}
	}
	p.fetched[digest] = true
}

func (p *puller) wasFetched(digest string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetched[digest]
}
