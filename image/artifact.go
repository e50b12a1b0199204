package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI artifacts (KEP-4639 image volumes, as CRI-O mounts them): a manifest
// whose config is no image config, or that names an artifactType, holds
// files, not filesystem layers. Each layer blob is one file of the volume,
// named by its org.opencontainers.image.title annotation (else the model
// spec's org.cncf.model.filepath); a layer with neither is skipped, as
// CRI-O does. The volume is one directory in the layer store whose files
// are hard links to the verified blobs: it mounts read-only like a
// single-layer image, and a container cannot run it.

const (
	annotationTitle         = "org.opencontainers.image.title"
	annotationModelFilepath = "org.cncf.model.filepath"
	// maxArtifactPath bounds a file's path in the volume (a title is
	// hostile input); each element stays within NAME_MAX.
	maxArtifactPath = 1024
	maxNameLen      = 255
)

// ErrBadArtifact is the cause of a pull of an artifact whose files cannot
// be laid out safely: a name that names nothing, two files at one path, a
// file where another needs a directory.
var ErrBadArtifact = errors.New("invalid OCI artifact")

// imageConfigTypes are the config media types of container images (an
// empty one included, as some images omit it).
var imageConfigTypes = []types.MediaType{"", types.OCIConfigJSON, types.DockerConfigJSON}

// artifactTypeOf is "" for a container image, else what the artifact is:
// its artifactType, or its config's media type.
func artifactTypeOf(m *v1.Manifest) string {
	if slices.Contains(imageConfigTypes, m.Config.MediaType) {
		return m.ArtifactType
	}
	if m.ArtifactType != "" {
		return m.ArtifactType
	}
	return string(m.Config.MediaType)
}

// artifactFile is one file of an artifact volume.
type artifactFile struct {
	Path string // relative, clean, never leaving the volume
	Desc v1.Descriptor
}

// artifactFiles lays the named layers out; a hostile name is contained
// (a leading "/" or "../" cannot leave the volume) or refused.
func artifactFiles(layers []v1.Descriptor) ([]artifactFile, error) {
	var out []artifactFile
	files, dirs := map[string]bool{}, map[string]bool{}
	for _, l := range layers {
		name := l.Annotations[annotationTitle]
		if name == "" {
			name = l.Annotations[annotationModelFilepath]
		}
		if name == "" {
			continue
		}
		p, err := cleanArtifactPath(name)
		if err != nil {
			return nil, err
		}
		if files[p] || dirs[p] {
			return nil, fmt.Errorf("%w: two files at %q", ErrBadArtifact, p)
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if files[d] {
				return nil, fmt.Errorf("%w: %q is a file and a directory", ErrBadArtifact, d)
			}
			dirs[d] = true
		}
		files[p] = true
		out = append(out, artifactFile{Path: p, Desc: l})
	}
	return out, nil
}

// cleanArtifactPath resolves a title inside the volume, lexically (the
// volume is built by minicri in an empty directory: no symlink exists).
func cleanArtifactPath(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: file name %q holds a NUL byte", ErrBadArtifact, name)
	}
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if p == "" {
		return "", fmt.Errorf("%w: file name %q names no file", ErrBadArtifact, name)
	}
	if len(p) > maxArtifactPath {
		return "", fmt.Errorf("%w: file name of %d bytes (at most %d)", ErrBadArtifact, len(p), maxArtifactPath)
	}
	for _, e := range strings.Split(p, "/") {
		if len(e) > maxNameLen {
			return "", fmt.Errorf("%w: file name element of %d bytes (at most %d)", ErrBadArtifact, len(e), maxNameLen)
		}
	}
	return p, nil
}

// checkArtifactSizes applies the pull's size limits to the declared sizes
// (each download is then held to its declared size).
func (p *puller) checkArtifactSizes(files []artifactFile) (total int64, _ error) {
	for _, f := range files {
		if f.Desc.Digest.Algorithm != "sha256" {
			return 0, fmt.Errorf("artifact file %s: only sha256 digests are supported", f.Desc.Digest)
		}
		if f.Desc.Size < 0 {
			return 0, fmt.Errorf("artifact file %s: negative size %d", f.Desc.Digest, f.Desc.Size)
		}
		if lim := p.lim.maxLayer; lim > 0 && f.Desc.Size > lim {
			return 0, fmt.Errorf("%w: artifact file %q of %d bytes, more than %d", ErrLayerTooLarge, f.Path, f.Desc.Size, lim)
		}
		total += f.Desc.Size
		if lim := p.lim.maxImage; lim > 0 && total > lim {
			return 0, fmt.Errorf("%w: artifact files of more than %d bytes", ErrImageTooLarge, lim)
		}
	}
	return total, nil
}

// pullArtifact records an OCI artifact: its files' blobs, fetched and
// verified, hard-linked into one volume directory keyed by the manifest's
// digest (also the artifact's ID: artifacts often share one empty config).
func (p *puller) pullArtifact(ctx context.Context, mb manifestBlob, m *v1.Manifest, atype string, blobs []string, topDigest string) (Image, error) {
	if err := p.s.checkLayers(len(m.Layers)); err != nil {
		return Image{}, err
	}
	files, err := artifactFiles(m.Layers)
	if err != nil {
		return Image{}, err
	}
	total, err := p.checkArtifactSizes(files)
	if err != nil {
		return Image{}, err
	}
	id := mb.digest.String()
	holdKeys := append([]string{"layer:" + id}, blobs...)
	for _, f := range files {
		holdKeys = append(holdKeys, f.Desc.Digest.String())
		if !slices.Contains(blobs, f.Desc.Digest.String()) {
			blobs = append(blobs, f.Desc.Digest.String())
		}
	}
	release := p.s.hold(holdKeys...)
	defer release()
	rec := &record{
		ID: id, ManifestDigest: id, ArtifactType: atype, Blobs: blobs, config: &v1.ConfigFile{},
		Size:   uint64(len(mb.data)) + uint64(total), //nolint:gosec // sizes checked non-negative
		Layers: []layerRecord{{Digest: id, DiffID: id, MediaType: string(mb.mediaType), Size: total}},
	}
	p.prog.total.Store(total)
	verified, err := p.verifyStoredBlobs(ctx, files, nil) // artifact_verify.go
	if err != nil {
		return Image{}, err
	}
	err = p.s.flights.do(ctx, "layer:"+id, p.prog, func(fctx context.Context, ps *progressSet) error {
		return p.ensureArtifactDir(fctx, ps, files, p.s.layerPath(id))
	})
	if err != nil {
		return Image{}, err
	}
	// Blobs another pull fetched meanwhile (its flight built the volume).
	if _, err := p.verifyStoredBlobs(ctx, files, verified); err != nil {
		return Image{}, err
	}
	tag := ""
	if p.ref.Digest == "" {
		tag = p.ref.String()
	}
	return p.s.commit(rec, tag, p.ref.Name()+"@"+topDigest)
}

// ensureArtifactDir builds the volume directory unless it exists.
func (p *puller) ensureArtifactDir(ctx context.Context, ps *progressSet, files []artifactFile, dir string) error {
	if exists(dir) {
		return nil
	}
	tmp, err := os.MkdirTemp(p.s.layDir, ".tmp-artifact-")
	if err != nil {
		return err
	}
	// The volume's root and directories must be searchable by a
	// non-root container user; the layer store above stays 0700.
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // see above
		_ = os.RemoveAll(tmp)
		return err
	}
	for _, f := range files {
		if err := p.ensureArtifactBlob(ctx, ps, f.Desc); err != nil {
			_ = os.RemoveAll(tmp)
			return fmt.Errorf("artifact file %q: %w", f.Path, err)
		}
		if err := linkArtifactFile(p.s.blobPath(f.Desc.Digest.String()), tmp, f.Path); err != nil {
			_ = os.RemoveAll(tmp)
			return fmt.Errorf("artifact file %q: %w", f.Path, err)
		}
	}
	return p.s.commitLayerDir(tmp, dir)
}

// linkArtifactFile hard-links the blob at rel under root (which minicri
// made and only minicri writes: no symlink can be on the way), readable by
// all: the blob store above is 0700, so this exposes it to the volume's
// mounts only.
func linkArtifactFile(blob, root, rel string) error {
	dst := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil { //nolint:gosec // a volume directory, see ensureArtifactDir
		return err
	}
	if err := os.Link(blob, dst); err != nil {
		return err
	}
	return os.Chmod(dst, 0o644) //nolint:gosec // read-only data the container reads
}

// ensureArtifactBlob fetches a blob unless the store has it, held to its
// declared size and digest.
func (p *puller) ensureArtifactBlob(ctx context.Context, ps *progressSet, d v1.Descriptor) error {
	if exists(p.s.blobPath(d.Digest.String())) {
		return nil
	}
	return p.tryEndpoints(ctx, capPull, "blob "+d.Digest.String(), func(_ int, cl *remote.Puller) error {
		rc, err := p.openBlob(ctx, cl, d.Digest)
		if err != nil {
			return err
		}
		defer rc.Close()
		bt, err := p.s.newBlobTemp(d.Digest.String(), d.Size)
		if err != nil {
			return err
		}
		defer bt.discard()
		// One byte past the declared size is enough to refuse it.
		r := io.LimitReader(&ctxReader{ctx: ctx, r: rc}, d.Size+1)
		if _, err := io.Copy(io.MultiWriter(bt, countingWriter{ps}), r); err != nil {
			return err
		}
		if bt.n != d.Size {
			return fmt.Errorf("blob %s: got %d bytes or more, want %d", d.Digest, bt.n, d.Size)
		}
		if err := bt.commit(); err != nil {
			return err
		}
		p.markFetched(d.Digest.String())
		return nil
	})
}
