// Package image pulls OCI and Docker images from registries, keeps them in a
// content-addressed store, unpacks each layer once into a directory in
// overlayfs form, and keeps image records. It knows nothing of gRPC.
//
// On-disk layout under Config.Root:
//
//	blobs/sha256/<hex>   verified blobs: manifests, indexes, configs, layers
//	blobs/tmp/           blobs being downloaded (removed by New)
//	layers/<hex>/        an unpacked layer, named by its diff ID (uncompressed digest)
//	layers/.tmp-*        layers being unpacked or removed (removed by New)
//	images/<hex>.json    image records, named by image ID (config digest)
package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/hostdir"
)

// ErrNotFound is returned (wrapped, with the reference) for images that are
// neither in the store nor, for Pull, in the registry.
var ErrNotFound = errors.New("image not found")

// ErrInvalidReference is returned (wrapped) for references that do not parse.
var ErrInvalidReference = errors.New("invalid image reference")

// ErrNoProgress is the cause of a pull that moved no bytes for
// Config.NoProgressTimeout.
var ErrNoProgress = errors.New("image pull made no progress")

// DefaultNoProgressTimeout applies when Config.NoProgressTimeout is zero
// (containerd's image_pull_progress_timeout).
const DefaultNoProgressTimeout = 5 * time.Minute

// Config configures a Store.
type Config struct {
	// Root is the store's directory, e.g. /var/lib/minicri/images.
	Root string
	// RegistryConfigPath is the directory of <host>/hosts.toml files;
	// empty means DefaultRegistryConfigPath.
	RegistryConfigPath string
	// NoProgressTimeout fails a pull that moves no bytes for this long;
	// 0 means DefaultNoProgressTimeout, negative disables it.
	NoProgressTimeout time.Duration
	// PinnedImages are references (e.g. the pause image) whose images are
	// reported as pinned.
	PinnedImages []string
	// Logger receives pull progress; nil means slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told of each pull's bytes and duration.
	Observer PullObserver
	// ProgressInterval is how often a running pull logs its progress;
	// 0 means 10s.
	ProgressInterval time.Duration
	// LazyPull serves the layers of eStargz images through Lazy instead
	// of unpacking them (lazylayer.go); Lazy, the node's minicri-lazyfs,
	// also unmounts and mounts again the lazily pulled layers of the
	// records when LazyPull is off.
	LazyPull bool
	Lazy     LazyServer
	// Platform selects the manifest of an index; nil means the host's.
	Platform *v1.Platform
	// MaxLayerSize bounds what one layer may unpack to, in bytes as the
	// disk takes them (sparse files expanded, each file or directory at
	// least 4 KiB, content rounded up to 4 KiB); 0 means
	// DefaultMaxLayerSize, negative disables it.
	MaxLayerSize int64
	// MaxImageSize bounds the same for all the layers a pull unpacks;
	// 0 means DefaultMaxImageSize, negative disables it.
	MaxImageSize int64
	// MaxLayerRatio bounds what the layers of a pull may unpack to beyond
	// 1 GiB, as a multiple of their compressed size (decompression bombs);
	// 0 means DefaultMaxLayerRatio, negative disables it.
	MaxLayerRatio int
	// MaxLayers bounds the layers of an image; 0 means DefaultMaxLayers
	// (overlayfs's limit), negative disables it.
	MaxLayers int
	// MaxEntries bounds the files, directories and links the layers of a
	// pull may unpack to (inodes); 0 means DefaultMaxEntries, negative
	// disables it.
	MaxEntries int64
}

// AuthConfig is the registry credential of a pull request (CRI AuthConfig).
type AuthConfig struct {
	Username, Password, Auth, ServerAddress, IdentityToken, RegistryToken string
}

// Image is an image of the store.
type Image struct {
	ID          string   // config digest, "sha256:..."
	RepoTags    []string // normalised, e.g. docker.io/library/busybox:latest
	RepoDigests []string // normalised, e.g. docker.io/library/busybox@sha256:...
	Size        uint64   // bytes of manifest, config and compressed layers
	User        string   // the config's User
	Pinned      bool
	Config      *v1.ConfigFile
	Layers      []string // unpacked layer directories, bottom first
	// ManifestDigest is the digest of the platform manifest.
	ManifestDigest string
	// ArtifactType is set for an OCI artifact: only an image volume can
	// use it (its one layer is a directory of its files).
	ArtifactType string
	// CheckpointName is the manifest's CheckpointAnnotation: the image
	// holds a container checkpoint (checkpointctl/buildah's packaging).
	CheckpointName string
}

// CheckpointAnnotation marks an image holding a container checkpoint (the
// name of the checkpointed container), as CRI-O reads it.
const CheckpointAnnotation = "io.kubernetes.cri-o.annotations.checkpoint.name"

// FsUsage is the disk usage of the store.
type FsUsage struct {
	Mountpoint string
	UsedBytes  uint64
	InodesUsed uint64
	Timestamp  int64 // unix nanoseconds
}

// layerRecord describes one layer of an image record.
type layerRecord struct {
	Digest    string `json:"digest"`  // compressed blob digest
	DiffID    string `json:"diff_id"` // uncompressed digest: the layer's directory
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// ChainID is set when the layer's directory is named by its chain ID:
	// it holds copies of files of the layers below (a hard link to one of
	// them, see lowerlink.go), so it is this chain's, not every image's
	// with this diff ID.
	ChainID string `json:"chain_id,omitempty"`
	// TOCDigest is the manifest's eStargz TOC digest of the layer, if any.
	TOCDigest string `json:"toc_digest,omitempty"`
	// Lazy: the layer is served by lazyfs at its lazy mount point
	// (lazylayer.go), not unpacked; Ref is the reference it was pulled by,
	// to mount it again after a restart.
	Lazy bool   `json:"lazy,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// dirKey names the layer's directory: its chain ID or its diff ID.
func (l layerRecord) dirKey() string {
	if l.ChainID != "" {
		return l.ChainID
	}
	return l.DiffID
}

// record is what images/<hex>.json holds.
type record struct {
	ID             string        `json:"id"`
	RepoTags       []string      `json:"repo_tags"`
	RepoDigests    []string      `json:"repo_digests"`
	Size           uint64        `json:"size"`
	ManifestDigest string        `json:"manifest_digest"`
	Layers         []layerRecord `json:"layers"`
	// Blobs are the digests of all blobs the image uses besides its layers:
	// indexes, manifest, config.
	Blobs []string `json:"blobs"`
	// Removed marks a tombstone: the image was removed while containers
	// used it. The record stays on disk, without names, so that the
	// containers can pin its layers again after a restart (see Acquire);
	// the last Release deletes it.
	Removed bool `json:"removed,omitempty"`
	// ArtifactType is set for an OCI artifact (artifact.go): its one
	// "layer" is the volume directory of its files, and it has no config.
	ArtifactType string `json:"artifact_type,omitempty"`
	// CheckpointName: see Image.CheckpointName.
	CheckpointName string `json:"checkpoint_name,omitempty"`

	config *v1.ConfigFile
}

// Store is the image store. Its methods are safe for concurrent use.
type Store struct {
	cfg     Config
	log     *slog.Logger
	blobDir string
	tmpDir  string
	layDir  string
	imgDir  string
	pinned  map[string]bool

	mu      sync.Mutex
	images  map[string]*record         // by ID
	leases  map[string]map[string]bool // image ID -> holders (see lease.go)
	held    map[string]map[string]bool // holder -> image IDs
	leased  map[string]*record         // records of leased images, kept after Remove
	pending map[string]int             // layer diff IDs and blob digests of pulls under way
	// removed holds the tombstones found on disk by New: images removed
	// while in use. Until FinishRecovery, Acquire finds them by ID (for
	// the containers that a restart recovers) and GC keeps their layers.
	removed    map[string]*record
	recovering bool

	ratioAllowance int64 // see pullLimits

	flights flightGroup

	// lazyMounted: the layers (blob digests) lazyfs serves for this store
	// now (under mu); mounts hold lazyMu for reading (concurrent
	// prefetches), collectLazy for writing (no mount under way while it
	// decides what no one uses and unmounts it).
	lazyMounted map[string]bool
	lazyMu      sync.RWMutex
	// lazyAuth: the credentials a lazy layer (blob digest) was pulled
	// with (under mu), in memory only, to renew its source's token and to
	// mount it again if lazyfs dies (never written to disk: a restarted
	// daemon mounts again without them).
	lazyAuth map[string]*AuthConfig

	// FsInfo walks the store only when its content changed (generation).
	fsGen   atomic.Uint64
	fsMu    sync.Mutex
	fsCache fsCache
}

type fsCache struct {
	gen   uint64
	valid bool
	usage FsUsage
}

// New opens (creating if needed) the store at cfg.Root. It removes what an
// interrupted pull left behind: temporary blobs and half-unpacked layers.
// It does not remove layers that no image uses (containers may still use
// them after a restart): the store starts in recovery, where containers
// re-acquire their images (even removed ones, by ID); FinishRecovery ends it
// and collects what no image and no container uses.
func New(cfg Config) (*Store, error) {
	if cfg.Root == "" {
		return nil, errors.New("image: no root directory")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	cfg.Root = root
	cfg.withDefaults()
	s := emptyStore(cfg)
	for _, p := range cfg.PinnedImages {
		n, err := NormalizeReference(p)
		if err != nil {
			return nil, fmt.Errorf("pinned image: %w", err)
		}
		s.pinned[n] = true
	}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills in what the configuration leaves at zero.
func (cfg *Config) withDefaults() {
	if cfg.RegistryConfigPath == "" {
		cfg.RegistryConfigPath = DefaultRegistryConfigPath
	}
	if cfg.NoProgressTimeout == 0 {
		cfg.NoProgressTimeout = DefaultNoProgressTimeout
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = 10 * time.Second
	}
	if cfg.MaxLayerSize == 0 {
		cfg.MaxLayerSize = DefaultMaxLayerSize
	}
	if cfg.MaxLayerRatio == 0 {
		cfg.MaxLayerRatio = DefaultMaxLayerRatio
	}
	if cfg.MaxImageSize == 0 {
		cfg.MaxImageSize = DefaultMaxImageSize
	}
	if cfg.MaxLayers == 0 {
		cfg.MaxLayers = DefaultMaxLayers
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
}

// emptyStore is an empty store over cfg.Root, still recovering.
func emptyStore(cfg Config) *Store {
	s := &Store{
		cfg:     cfg,
		log:     cfg.Logger,
		blobDir: filepath.Join(cfg.Root, "blobs", "sha256"),
		tmpDir:  filepath.Join(cfg.Root, "blobs", "tmp"),
		layDir:  filepath.Join(cfg.Root, "layers"),
		imgDir:  filepath.Join(cfg.Root, "images"),
		pinned:  map[string]bool{},
		images:  map[string]*record{},
		leases:  map[string]map[string]bool{},
		held:    map[string]map[string]bool{},
		leased:  map[string]*record{},
		pending: map[string]int{},
		removed: map[string]*record{},

		lazyMounted: map[string]bool{},
		lazyAuth:    map[string]*AuthConfig{},

		recovering: true,

		ratioAllowance: ratioAllowance,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// makeDirs empties the temporary directory and makes the store's tree.
func (s *Store) makeDirs() error {
	if err := os.RemoveAll(s.tmpDir); err != nil {
		return err
	}
	// Unpacked layers hold the images' setuid files, device nodes and file
	// capabilities: only root may enter the store (set again on every
	// start, whatever mode an older minicri left).
	if err := hostdir.Ensure(s.cfg.Root, hostdir.Private); err != nil {
		return err
	}
	for _, d := range []string{s.blobDir, s.tmpDir, s.layDir, s.imgDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// cleanup removes partial state: half-unpacked or half-removed layer
// directories and temporary record files.
func (s *Store) cleanup() error {
	ents, err := os.ReadDir(s.layDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if err := os.RemoveAll(filepath.Join(s.layDir, e.Name())); err != nil {
				return err
			}
		}
	}
	ents, err = os.ReadDir(s.imgDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			if err := os.RemoveAll(filepath.Join(s.imgDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) load() error {
	ents, err := os.ReadDir(s.imgDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.imgDir, e.Name()))
		if err != nil {
			return err
		}
		var r record
		if err := json.Unmarshal(data, &r); err != nil {
			s.log.Warn("image: ignoring unreadable image record", "file", e.Name(), "error", err)
			continue
		}
		cfg, err := &v1.ConfigFile{}, error(nil) // an artifact has none
		if r.ArtifactType == "" {
			cfg, err = s.readConfig(r.ID)
		}
		if err != nil {
			s.log.Warn("image: ignoring image record without config", "image", r.ID, "error", err)
			continue
		}
		r.config = cfg
		if r.Removed {
			s.removed[r.ID] = &r
			continue
		}
		s.images[r.ID] = &r
	}
	return nil
}

func (s *Store) readConfig(id string) (*v1.ConfigFile, error) {
	data, err := os.ReadFile(s.blobPath(id))
	if err != nil {
		return nil, err
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func (s *Store) blobPath(dgst string) string {
	return filepath.Join(s.blobDir, strings.TrimPrefix(dgst, "sha256:"))
}

// layerPath is the directory of a layer by its diff ID or chain ID.
func (s *Store) layerPath(key string) string {
	return filepath.Join(s.layDir, strings.TrimPrefix(key, "sha256:"))
}

func (s *Store) recordPath(id string) string {
	return filepath.Join(s.imgDir, strings.TrimPrefix(id, "sha256:")+".json")
}

// image converts a record; s.mu held.
func (s *Store) image(r *record) Image {
	img := Image{
		ID:             r.ID,
		RepoTags:       slices.Clone(r.RepoTags),
		RepoDigests:    slices.Clone(r.RepoDigests),
		Size:           r.Size,
		Config:         r.config,
		ManifestDigest: r.ManifestDigest,
		ArtifactType:   r.ArtifactType,
		CheckpointName: r.CheckpointName,
	}
	if r.config != nil {
		img.User = r.config.Config.User
	}
	for _, t := range r.RepoTags {
		if s.pinned[t] {
			img.Pinned = true
		}
	}
	for _, l := range r.Layers {
		if l.Lazy {
			img.Layers = append(img.Layers, s.lazyMount(l.Digest))
			continue
		}
		img.Layers = append(img.Layers, s.layerPath(l.dirKey()))
	}
	return img
}

// writeRecord persists r atomically; s.mu held.
func (s *Store) writeRecord(r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.recordPath(r.ID), data, 0o600)
}

// lookup resolves ref to a record: an image ID ("sha256:<hex>" or "<hex>"),
// a tag or digest reference in any form that normalises to one the store
// knows, or a unique prefix of an ID. s.mu held.
func (s *Store) lookup(ref string) (*record, error) {
	if ref == "" {
		return nil, fmt.Errorf("%w: empty reference", ErrInvalidReference)
	}
	id := ref
	if isHex(ref) && len(ref) == 64 {
		id = "sha256:" + ref
	}
	if r, ok := s.images[id]; ok {
		return r, nil
	}
	if pr, err := parseReference(ref); err == nil {
		canon := pr.String()
		for _, r := range s.images {
			if slices.Contains(r.RepoTags, canon) || slices.Contains(r.RepoDigests, canon) {
				return r, nil
			}
		}
		// name@<digest> where the digest is the image's manifest or ID.
		if pr.Digest != "" {
			for _, r := range s.images {
				if r.ID == pr.Digest || r.ManifestDigest == pr.Digest {
					for _, d := range append(slices.Clone(r.RepoDigests), r.RepoTags...) {
						if strings.HasPrefix(d, pr.Name()+"@") || strings.HasPrefix(d, pr.Name()+":") {
							return r, nil
						}
					}
				}
			}
		}
	}
	prefix := strings.TrimPrefix(ref, "sha256:")
	if isHex(prefix) {
		var found *record
		for rid, r := range s.images {
			if strings.HasPrefix(strings.TrimPrefix(rid, "sha256:"), prefix) {
				if found != nil {
					return nil, fmt.Errorf("%w: %s: ambiguous image ID prefix", ErrNotFound, ref)
				}
				found = r
			}
		}
		if found != nil {
			return found, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, ref)
}

// Status returns the image that ref names (see lookup for the forms).
func (s *Store) Status(ref string) (Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(ref)
	if err != nil {
		return Image{}, err
	}
	if err := s.runnableLocked(r); err != nil {
		return Image{}, err
	}
	return s.image(r), nil
}

// List returns the images, sorted by ID. A non-empty filter keeps the image
// it names (as Status), or, for a repository name without tag or digest,
// the images with a tag or digest in that repository.
func (s *Store) List(filter string) ([]Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Image
	if filter == "" {
		for _, r := range s.images {
			out = append(out, s.image(r))
		}
	} else if r, err := s.lookup(filter); err == nil {
		out = append(out, s.image(r))
	} else if last := filter[strings.LastIndex(filter, "/")+1:]; !strings.ContainsAny(last, ":@") {
		pr, err := parseReference(filter)
		if err != nil {
			return nil, err
		}
		for _, r := range s.images {
			for _, n := range append(slices.Clone(r.RepoTags), r.RepoDigests...) {
				if strings.HasPrefix(n, pr.Name()+":") || strings.HasPrefix(n, pr.Name()+"@") {
					out = append(out, s.image(r))
					break
				}
			}
		}
	}
	// An image with a lazily pulled layer not served is not there to run.
	out = slices.DeleteFunc(out, func(img Image) bool { return s.runnableLocked(s.images[img.ID]) != nil })
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Remove removes the image that ref names, with all its tags, and then its
// layers and blobs that no other image and no lease uses. Removing an image
// that is not there is not an error.
func (s *Store) Remove(ref string) error {
	trash, err := s.remove(ref)
	err = errors.Join(err, purge(trash), s.collectLazy())
	s.fsGen.Add(1)
	return err
}

func (s *Store) remove(ref string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(ref)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(s.leases[r.ID]) > 0 {
		// Containers use it: keep a tombstone, so that their leases
		// survive a restart (the leases themselves live in memory).
		tomb := *r
		tomb.RepoTags, tomb.RepoDigests, tomb.Removed = nil, nil, true
		if err := s.writeRecord(&tomb); err != nil {
			return nil, err
		}
		s.leased[r.ID] = &tomb
	} else if err := s.deleteRecord(r.ID); err != nil {
		return nil, err
	}
	delete(s.images, r.ID)
	return s.gcLocked()
}

// deleteRecord removes the record file of image id; s.mu held.
func (s *Store) deleteRecord(id string) error {
	if err := os.Remove(s.recordPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(s.imgDir)
}

// FinishRecovery ends the recovery that New starts: the containers of the
// previous run have re-acquired their images. Tombstones of removed images
// that none of them re-acquired are deleted, then GC collects the layers and
// blobs that no image and no container uses.
func (s *Store) FinishRecovery() error {
	s.mu.Lock()
	s.recovering = false
	var errs []error
	for id := range s.removed {
		if len(s.leases[id]) == 0 {
			if err := s.deleteRecord(id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	clear(s.removed)
	trash, err := s.gcLocked()
	s.mu.Unlock()
	err = errors.Join(append(errs, err, purge(trash), s.collectLazy())...)
	s.fsGen.Add(1)
	return err
}

// GC removes the layers and blobs that no image, lease or pull under way uses.
func (s *Store) GC() error {
	s.mu.Lock()
	trash, err := s.gcLocked()
	s.mu.Unlock()
	err = errors.Join(err, purge(trash), s.collectLazy())
	s.fsGen.Add(1)
	return err
}

// purge deletes layer directories that gcLocked moved aside, without the
// store's lock.
func purge(trash []string) error {
	var errs []error
	for _, d := range trash {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// usedLocked is what the records, leases and pulls under way use: image
// IDs, blob digests (layers' too) and "layer:<dir key>"s. s.mu held.
func (s *Store) usedLocked() map[string]bool {
	used := map[string]bool{}
	mark := func(r *record) {
		used[r.ID] = true
		used[r.ManifestDigest] = true
		for _, b := range r.Blobs {
			used[b] = true
		}
		for _, l := range r.Layers {
			used[l.Digest] = true
			used["layer:"+l.dirKey()] = true
		}
	}
	for _, r := range s.images {
		mark(r)
	}
	for _, r := range s.leased {
		mark(r)
	}
	for _, r := range s.removed { // during recovery only
		mark(r)
	}
	for k := range s.pending {
		used[k] = true
	}
	return used
}

// gcLocked removes unused blobs and moves unused layer directories aside
// (to .tmp-rm-*, which New also removes); the caller purges those after
// unlocking. s.mu held.
func (s *Store) gcLocked() (trash []string, _ error) {
	used := s.usedLocked()
	var errs []error
	ents, err := os.ReadDir(s.layDir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || used["layer:sha256:"+e.Name()] {
			continue
		}
		// Rename first so that a crash mid-removal leaves a temp dir that
		// New removes, never a half-empty layer.
		dead := filepath.Join(s.layDir, fmt.Sprintf(".tmp-rm-%s-%d", e.Name(), time.Now().UnixNano()))
		if err := os.Rename(filepath.Join(s.layDir, e.Name()), dead); err != nil {
			errs = append(errs, err)
			continue
		}
		trash = append(trash, dead)
	}
	ents, err = os.ReadDir(s.blobDir)
	if err != nil {
		return trash, err
	}
	for _, e := range ents {
		if used["sha256:"+e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(s.blobDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return trash, errors.Join(errs...)
}

// commit records a pulled image: it takes the tag from any image that had
// it, merges names into an existing record of the same ID, and persists.
func (s *Store) commit(r *record, tag, repoDigest string) (Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.fsGen.Add(1)
	var changed []*record
	if tag != "" {
		for _, o := range s.images {
			if o.ID != r.ID && slices.Contains(o.RepoTags, tag) {
				o.RepoTags = slices.DeleteFunc(o.RepoTags, func(t string) bool { return t == tag })
				changed = append(changed, o)
			}
		}
	}
	if old, ok := s.images[r.ID]; ok {
		r.RepoTags = old.RepoTags
		r.RepoDigests = old.RepoDigests
		for _, b := range old.Blobs {
			if !slices.Contains(r.Blobs, b) {
				r.Blobs = append(r.Blobs, b)
			}
		}
	}
	if tag != "" && !slices.Contains(r.RepoTags, tag) {
		r.RepoTags = append(r.RepoTags, tag)
	}
	if repoDigest != "" && !slices.Contains(r.RepoDigests, repoDigest) {
		r.RepoDigests = append(r.RepoDigests, repoDigest)
	}
	if err := s.writeRecord(r); err != nil {
		return Image{}, err
	}
	s.images[r.ID] = r
	delete(s.removed, r.ID)
	if s.leased[r.ID] != nil {
		s.leased[r.ID] = r
	}
	for _, o := range changed {
		if err := s.writeRecord(o); err != nil {
			return Image{}, err
		}
	}
	return s.image(r), nil
}

// hold marks keys (layer diff IDs as "layer:<id>", blob digests) as in use
// by a pull so that GC leaves them; the returned func releases them.
func (s *Store) hold(keys ...string) func() {
	s.mu.Lock()
	for _, k := range keys {
		s.pending[k]++
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		for _, k := range keys {
			if s.pending[k]--; s.pending[k] <= 0 {
				delete(s.pending, k)
			}
		}
		s.mu.Unlock()
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// contextErr returns the cause of ctx's end, if it ended.
func contextErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
