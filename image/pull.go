package image

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/minicri/minicri/lazy"
)

// placeholderHost is the registry host go-containerregistry sees.
const placeholderHost = "registry.minicri.invalid"

// maxManifestSize bounds manifests and configs held in memory.
const maxManifestSize = 8 << 20

// layerConcurrency is how many layers of one image download at once.
const layerConcurrency = 4

// Pull pulls ref (normalised: "busybox" is docker.io/library/busybox:latest)
// for the store's platform and returns the image. auth may be nil.
// An image that is already complete costs one manifest request.
func (s *Store) Pull(ctx context.Context, ref string, auth *AuthConfig) (Image, error) {
	pr, err := parseReference(ref)
	if err != nil {
		return Image{}, err
	}
	eps, err := loadEndpoints(s.cfg.RegistryConfigPath, pr.Registry)
	if err != nil {
		return Image{}, fmt.Errorf("registry hosts for %s: %w", pr.Registry, err)
	}
	// go-containerregistry addresses a placeholder host that each
	// endpoint's transport rewrites to the endpoint's URL. (Using the real
	// host would make it guess the scheme, and ping both https and http for
	// loopback registries.)
	repo, err := name.NewRepository(placeholderHost+"/"+pr.Repo, name.WeakValidation)
	if err != nil {
		return Image{}, fmt.Errorf("%w: %q: %v", ErrInvalidReference, ref, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &puller{
		s:       s,
		ref:     pr,
		repo:    repo,
		eps:     eps,
		auth:    auth,
		prog:    newPullProgress(),
		lim:     s.newPullLimits(),
		clients: map[int]*remote.Puller{},
		dead:    map[int]bool{},
	}
	start := time.Now()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		s.watch(ctx, cancel, p.prog, pr.String(), start)
	}()
	p.warmLazy(ctx)
	img, err := p.pull(ctx)
	cancel(nil)
	p.bg.Wait()
	if p.lazy != nil {
		p.lazy.CloseIdle()
	}
	<-watchDone
	if s.cfg.Observer != nil {
		s.cfg.Observer.PullDone(p.prog.bytes.Load(), time.Since(start), err)
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrNoProgress) {
			err = cause
		}
		if errors.Is(err, ErrLayerTooLarge) {
			// The layers of the image that fit are left: collect them,
			// or pulls of one hostile image after another fill the disk.
			if gerr := s.GC(); gerr != nil {
				s.log.Warn("image: GC after a pull over the limits failed", "image", pr.String(), "error", gerr)
			}
		}
		return Image{}, sanitizedError(fmt.Errorf("pull %s: %w", pr.String(), err), 4*maxRemoteText)
	}
	s.log.Info("pulled image", "image", pr.String(), "id", img.ID,
		"bytes", p.prog.bytes.Load(), "duration", time.Since(start).Round(time.Millisecond))
	return img, nil
}

// watch fails the pull when it moves nothing for the no-progress timeout,
// and logs progress of long pulls.
func (s *Store) watch(ctx context.Context, cancel context.CancelCauseFunc, p *pullProgress, ref string, start time.Time) {
	timeout := s.cfg.NoProgressTimeout
	tick := time.Second
	if timeout > 0 && timeout/4 < tick {
		tick = max(timeout/4, 10*time.Millisecond)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	lastLog, lastBytes := start, int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if timeout > 0 && p.idle() > timeout {
				cancel(fmt.Errorf("%w for %v", ErrNoProgress, timeout))
				return
			}
			if now.Sub(lastLog) >= s.cfg.ProgressInterval {
				b := p.bytes.Load()
				rate := float64(b-lastBytes) / now.Sub(lastLog).Seconds()
				s.log.Info("pulling image", "image", ref, "bytes", b, "total", p.total.Load(),
					"rate", humanRate(rate), "elapsed", now.Sub(start).Round(time.Second))
				lastLog, lastBytes = now, b
			}
		}
	}
}

// puller is one pull: the reference, the endpoints to try, credentials.
type puller struct {
	s    *Store
	ref  reference
	repo name.Repository
	eps  []endpoint
	auth *AuthConfig
	prog *pullProgress
	lim  *pullLimits

	// chains are the chain IDs of the image's layers (flight keys, and the
	// directory names of layers that depend on the layers below).
	chains []string

	mu      sync.Mutex
	clients map[int]*remote.Puller
	dead    map[int]bool    // endpoints that failed to connect in this pull
	fetched map[string]bool // artifact blobs this pull downloaded (artifact_verify.go)
	lazy    *lazyClients    // the range requests' clients, made at the first lazy layer
	bg      sync.WaitGroup  // the pull's own goroutines that outlive a step (lazypull.go)
	// lazyDone: closed when layer i's lazy mount (mountLazyLayers) is
	// done; lazyErr: why it failed (the layer is then pulled whole).
	lazyDone map[int]chan struct{}
	lazyErr  map[int]error
}

func (p *puller) client(i int) (*remote.Puller, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[i]; ok {
		return c, nil
	}
	ep := p.eps[i]
	base, err := ep.httpTransport()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ep, err)
	}
	rt := &rewriteTransport{registryHost: p.repo.RegistryStr(), ep: ep, base: base, progress: p.prog}
	c, err := remote.NewPuller(
		remote.WithTransport(rt),
		remote.WithAuth(p.authenticator(ep)),
		remote.WithUserAgent("minicri"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 2}),
	)
	if err != nil {
		return nil, err
	}
	p.clients[i] = c
	return c, nil
}

// authenticator applies the request's credentials to the registry they
// name (all endpoints of this pull when they name none).
func (p *puller) authenticator(ep endpoint) authn.Authenticator {
	a := p.auth
	if a == nil || (a.Username == "" && a.Password == "" && a.Auth == "" && a.IdentityToken == "" && a.RegistryToken == "") {
		return authn.Anonymous
	}
	if a.ServerAddress != "" {
		srv := serverHost(a.ServerAddress)
		if srv != serverHost(p.ref.Registry) && srv != ep.URL.Host {
			return authn.Anonymous
		}
	}
	cfg := authn.AuthConfig{
		Username: a.Username, Password: a.Password, Auth: a.Auth,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
	}
	if cfg.Username == "" && cfg.Auth != "" {
		if dec, err := base64.StdEncoding.DecodeString(cfg.Auth); err == nil {
			if u, pw, ok := strings.Cut(string(dec), ":"); ok {
				cfg.Username, cfg.Password, cfg.Auth = u, pw, ""
			}
		}
	}
	return authn.FromConfig(cfg)
}

// serverHost reduces a server address ("https://index.docker.io/v1/") to a
// registry host, with Docker Hub's aliases folded into docker.io.
func serverHost(addr string) string {
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	addr, _, _ = strings.Cut(addr, "/")
	switch addr {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return dockerHub
	}
	return addr
}

// endpointsWith returns the indexes of endpoints with capability c, in order.
func (p *puller) endpointsWith(c capability) []int {
	var out []int
	for i, ep := range p.eps {
		if ep.Caps&c != 0 {
			out = append(out, i)
		}
	}
	return out
}

func (p *puller) isDead(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead[i]
}

func (p *puller) markDead(i int, err error) {
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout()) {
		p.mu.Lock()
		p.dead[i] = true
		p.mu.Unlock()
	}
}

// tryEndpoints calls fn with each endpoint with capability c until one
// succeeds. The error says "not found" only if an endpoint said so and none
// failed otherwise, or if the registry's own server said so.
func (p *puller) tryEndpoints(ctx context.Context, c capability, what string, fn func(i int, cl *remote.Puller) error) error {
	var errs []error
	notFound := false
	tried := 0
	for _, i := range p.endpointsWith(c) {
		if p.isDead(i) {
			continue
		}
		if err := contextErr(ctx); err != nil {
			return err
		}
		tried++
		cl, err := p.client(i)
		if err == nil {
			err = fn(i, cl)
		}
		if err == nil {
			return nil
		}
		if cerr := contextErr(ctx); cerr != nil {
			return cerr
		}
		if fault := (*imageFault)(nil); errors.As(err, &fault) {
			// The content is what the image names: other hosts would
			// serve the same bytes.
			return fmt.Errorf("%s of %s: %w", what, p.ref.String(), fault.err)
		}
		ep := p.eps[i]
		if isNotFound(err) {
			notFound = true
			if !ep.Mirror {
				return fmt.Errorf("%w: %s", ErrNotFound, p.ref.String())
			}
		} else {
			p.markDead(i, err)
			errs = append(errs, fmt.Errorf("%s: %w", ep, endpointError(err, ep)))
		}
		if ep.Mirror {
			p.s.log.Debug("image: mirror failed, trying next host", "image", p.ref.String(), "host", ep.String(), "what", what, "error", err)
		}
	}
	if tried == 0 {
		return fmt.Errorf("no registry host for %s of %s", what, p.ref.String())
	}
	if notFound && len(errs) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, p.ref.String())
	}
	return fmt.Errorf("%s of %s: %w", what, p.ref.String(), errors.Join(errs...))
}

func isNotFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			return true
		}
	}
	return false
}

// manifestBlob is a manifest or index with its media type and digest.
type manifestBlob struct {
	data      []byte
	mediaType types.MediaType
	digest    v1.Hash
}

// getManifest fetches the manifest that ref names: by tag from a
// resolve-capable host; by digest from the local store if it is there,
// else from a pull-capable host.
func (p *puller) getManifest(ctx context.Context, tagOrDigest name.Reference, isDigest bool) (manifestBlob, error) {
	if isDigest {
		if data, err := os.ReadFile(p.s.blobPath(tagOrDigest.Identifier())); err == nil {
			var mt struct {
				MediaType types.MediaType `json:"mediaType"`
			}
			h, _ := v1.NewHash(tagOrDigest.Identifier())
			if json.Unmarshal(data, &mt) == nil {
				return manifestBlob{data: data, mediaType: sniffMediaType(mt.MediaType, data), digest: h}, nil
			}
		}
	}
	c := capResolve
	if isDigest {
		c = capPull
	}
	var mb manifestBlob
	err := p.tryEndpoints(ctx, c, "manifest", func(_ int, cl *remote.Puller) error {
		desc, err := cl.Get(ctx, tagOrDigest)
		if err != nil {
			return err
		}
		if len(desc.Manifest) > maxManifestSize {
			return fmt.Errorf("manifest of %d bytes is too large", len(desc.Manifest))
		}
		sum := sha256.Sum256(desc.Manifest)
		h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
		if isDigest && h.String() != tagOrDigest.Identifier() {
			return fmt.Errorf("manifest digest mismatch: got %s, want %s", h, tagOrDigest.Identifier())
		}
		mb = manifestBlob{data: desc.Manifest, mediaType: sniffMediaType(desc.MediaType, desc.Manifest), digest: h}
		return nil
	})
	if err != nil {
		return manifestBlob{}, err
	}
	if err := p.s.writeBlob(mb.digest.String(), mb.data); err != nil {
		return manifestBlob{}, err
	}
	return mb, nil
}

// sniffMediaType fills in a media type a registry left out.
func sniffMediaType(mt types.MediaType, data []byte) types.MediaType {
	if mt != "" && mt != "application/json" && mt != "text/plain" {
		return mt
	}
	var probe struct {
		MediaType     types.MediaType `json:"mediaType"`
		Manifests     json.RawMessage `json:"manifests"`
		SchemaVersion int             `json:"schemaVersion"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return mt
	}
	switch {
	case probe.MediaType != "":
		return probe.MediaType
	case probe.Manifests != nil:
		return types.OCIImageIndex
	case probe.SchemaVersion == 1:
		return types.DockerManifestSchema1
	default:
		return types.OCIManifestSchema1
	}
}

// platform is the store's target platform.
func (s *Store) platform() v1.Platform {
	if s.cfg.Platform != nil {
		return *s.cfg.Platform
	}
	pl := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if runtime.GOARCH == "arm" {
		pl.Variant = "v7"
	}
	return pl
}

func pickManifest(idx *v1.IndexManifest, want v1.Platform) (v1.Descriptor, bool) {
	var fallback *v1.Descriptor
	for i := range idx.Manifests {
		d := &idx.Manifests[i]
		if d.Platform == nil {
			continue
		}
		if d.Platform.OS != want.OS || d.Platform.Architecture != want.Architecture {
			continue
		}
		if d.Platform.Variant == want.Variant {
			return *d, true
		}
		if fallback == nil && (d.Platform.Variant == "" || want.Variant == "" ||
			(want.Architecture == "arm64" && d.Platform.Variant == "v8")) {
			fallback = d
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return v1.Descriptor{}, false
}

func (p *puller) pull(ctx context.Context) (Image, error) {
	top, err := p.resolveManifest(ctx)
	if err != nil {
		return Image{}, err
	}
	mb, m := top.mb, top.m
	if atype := artifactTypeOf(m); atype != "" {
		return p.pullArtifact(ctx, mb, m, atype, top.blobs, top.digest)
	}
	if err := p.s.checkLayers(len(m.Layers)); err != nil {
		return Image{}, err
	}
	p.probeLazy(ctx, m)
	cfg, cfgData, err := p.imageConfig(ctx, m)
	if err != nil {
		return Image{}, err
	}
	configDigest := m.Config.Digest.String()
	holdKeys := append([]string{configDigest}, top.blobs...)
	for _, l := range m.Layers {
		holdKeys = append(holdKeys, l.Digest.String())
	}
	p.chains = chainIDs(cfg.RootFS.DiffIDs)
	for i, d := range cfg.RootFS.DiffIDs {
		holdKeys = append(holdKeys, "layer:"+d.String(), "layer:"+p.chains[i])
	}
	release := p.s.hold(holdKeys...)
	defer release()
	// A GC between fetching these and holding them may have removed them.
	if err := p.s.writeBlob(configDigest, cfgData); err != nil {
		return Image{}, err
	}
	for _, b := range top.blobs {
		if !exists(p.s.blobPath(b)) {
			return Image{}, fmt.Errorf("blob %s removed during the pull; try again", b)
		}
	}
	rec := &record{
		ID:             configDigest,
		ManifestDigest: mb.digest.String(),
		Size:           top.size + uint64(len(cfgData)),
		Blobs:          append(top.blobs, configDigest),
		CheckpointName: m.Annotations[CheckpointAnnotation],
		config:         cfg,
	}
	if err := p.addLayers(rec, m, cfg.RootFS.DiffIDs); err != nil {
		return Image{}, err
	}
	if err := p.fetchLayers(ctx, rec); err != nil {
		return Image{}, err
	}
	tag := ""
	if p.ref.Digest == "" {
		tag = p.ref.String()
	}
	return p.s.commit(rec, tag, p.ref.Name()+"@"+top.digest)
}

// resolved is the image manifest a reference leads to: through at most
// three levels of index, to the entry for this platform.
type resolved struct {
	mb     manifestBlob
	m      *v1.Manifest
	digest string   // the reference's own manifest or index
	blobs  []string // every manifest and index on the way
	size   uint64   // the image manifest's
}

func (p *puller) resolveManifest(ctx context.Context) (resolved, error) {
	var top name.Reference = p.repo.Tag(p.ref.Tag)
	if p.ref.Digest != "" {
		top = p.repo.Digest(p.ref.Digest)
	}
	mb, err := p.getManifest(ctx, top, p.ref.Digest != "")
	if err != nil {
		return resolved{}, err
	}
	r := resolved{digest: mb.digest.String(), blobs: []string{mb.digest.String()}, size: uint64(len(mb.data))}
	for depth := 0; mb.mediaType.IsIndex(); depth++ {
		if depth > 2 {
			return r, errors.New("nested image indexes are too deep")
		}
		idx, err := v1.ParseIndexManifest(strings.NewReader(string(mb.data)))
		if err != nil {
			return r, fmt.Errorf("parse index %s: %w", mb.digest, err)
		}
		want := p.s.platform()
		d, ok := pickManifest(idx, want)
		if !ok {
			return r, fmt.Errorf("%w: %s: no manifest for platform %s", ErrNotFound, p.ref.String(), want.String())
		}
		mb, err = p.getManifest(ctx, p.repo.Digest(d.Digest.String()), true)
		if err != nil {
			return r, err
		}
		r.blobs = append(r.blobs, mb.digest.String())
		r.size = uint64(len(mb.data))
	}
	switch mb.mediaType {
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
	case types.DockerManifestSchema1, types.DockerManifestSchema1Signed:
		return r, fmt.Errorf("%s: Docker schema 1 manifests are not supported", p.ref.String())
	default:
		return r, fmt.Errorf("%s: unsupported manifest media type %q", p.ref.String(), mb.mediaType)
	}
	if r.m, err = v1.ParseManifest(strings.NewReader(string(mb.data))); err != nil {
		return r, fmt.Errorf("parse manifest %s: %w", mb.digest, err)
	}
	r.mb = mb
	return r, nil
}

// imageConfig fetches and parses the image's config; it must name one
// diff ID per layer.
func (p *puller) imageConfig(ctx context.Context, m *v1.Manifest) (*v1.ConfigFile, []byte, error) {
	configDigest := m.Config.Digest.String()
	cfgData, err := p.ensureSmallBlob(ctx, m.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", configDigest, err)
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return nil, nil, fmt.Errorf("parse config %s: %w", configDigest, err)
	}
	if n := len(cfg.RootFS.DiffIDs); n != len(m.Layers) {
		return nil, nil, fmt.Errorf("config %s has %d diff IDs for %d layers", configDigest, n, len(m.Layers))
	}
	return &cfg, cfgData, nil
}

// addLayers records the manifest's layers and sets the bytes left to fetch.
func (p *puller) addLayers(rec *record, m *v1.Manifest, diffIDs []v1.Hash) error {
	var todo int64
	for i, l := range m.Layers {
		if l.Digest.Algorithm != "sha256" || diffIDs[i].Algorithm != "sha256" {
			return fmt.Errorf("layer %s: only sha256 digests are supported", l.Digest)
		}
		if l.Size < 0 {
			// It would skip the download's size check and be subtracted
			// (wrapping) from the image's size.
			return fmt.Errorf("layer %s: negative size %d", l.Digest, l.Size)
		}
		rec.Layers = append(rec.Layers, layerRecord{
			Digest: l.Digest.String(), DiffID: diffIDs[i].String(), MediaType: string(l.MediaType), Size: l.Size,
		})
		if p.s.cfg.LazyPull { // lazy pulls off: records as they were
			rec.Layers[i].TOCDigest = l.Annotations[lazy.TOCDigestAnnotation]
		}
		rec.Size += uint64(l.Size)
	}
	for i, l := range rec.Layers {
		if _, ok := p.layerDir(rec.Layers, i); !ok {
			todo += l.Size
		}
	}
	p.prog.total.Store(todo)
	return nil
}

// fetchLayers downloads and unpacks the record's layers, a few at a time;
// a layer another pull is fetching is waited for, not fetched twice. The
// eStargz layers (with lazy pulls on) are mounted all at once beside them
// (mountLazyLayers). It records which layers' directories are named by
// their chain ID.
func (p *puller) fetchLayers(ctx context.Context, rec *record) error {
	p.mountLazyLayers(ctx, rec.Layers)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(layerConcurrency)
	for i := range rec.Layers {
		g.Go(func() error { return p.layerFlight(gctx, rec.Layers, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := contextErr(ctx); err != nil {
		return err
	}
	for i := range rec.Layers {
		l := &rec.Layers[i]
		switch d, ok := p.layerDir(rec.Layers, i); {
		case !ok:
			return fmt.Errorf("layer %s removed during the pull; try again", l.DiffID)
		case d == p.s.lazyMount(l.Digest):
			l.Lazy, l.Ref = true, p.ref.String()
		case d != p.s.layerPath(l.DiffID):
			l.ChainID = p.chains[i]
		}
	}
	return nil
}

// layerFlight makes layer i exist, or waits for the pull that is making it.
func (p *puller) layerFlight(ctx context.Context, layers []layerRecord, i int) error {
	return p.s.flights.do(ctx, "layer:"+p.chains[i], p.prog, func(fctx context.Context, ps *progressSet) error {
		return p.ensureLayer(fctx, ps, layers, i)
	})
}

// layerDir is layer i's directory (by chain ID, else by diff ID) and
// whether it exists.
func (p *puller) layerDir(layers []layerRecord, i int) (string, bool) {
	if i > 0 {
		if d := p.s.layerPath(p.chains[i]); exists(d) {
			return d, true
		}
	}
	d := p.s.layerPath(layers[i].DiffID)
	if !exists(d) && p.s.isLazy(layers[i].Digest) {
		return p.s.lazyMount(layers[i].Digest), true
	}
	return d, exists(d)
}

// lowersOf returns what gives the directories of the layers below i, top
// first, once they exist (it fetches them if no one is).
func (p *puller) lowersOf(layers []layerRecord, i int) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		dirs := make([]string, 0, i)
		for k := i - 1; k >= 0; k-- {
			if err := p.layerFlight(ctx, layers, k); err != nil {
				return nil, fmt.Errorf("layer %s below: %w", layers[k].Digest, err)
			}
			d, ok := p.layerDir(layers, k)
			if !ok {
				return nil, fmt.Errorf("layer %s below removed during the pull; try again", layers[k].Digest)
			}
			dirs = append(dirs, d)
		}
		return dirs, nil
	}
}

// chainIDs computes the OCI chain IDs of layers with these diff IDs.
func chainIDs(diffIDs []v1.Hash) []string {
	out := make([]string, len(diffIDs))
	for i, d := range diffIDs {
		if i == 0 {
			out[i] = d.String()
			continue
		}
		sum := sha256.Sum256([]byte(out[i-1] + " " + d.String()))
		out[i] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out
}

// commitLayer renames layer i's unpacked directory into place: under its
// chain ID if it copied files of the layers below, else its diff ID.
func (p *puller) commitLayer(tmp string, usedLowers bool, layers []layerRecord, i int) error {
	key := layers[i].DiffID
	if usedLowers {
		key = p.chains[i]
	}
	return p.s.commitLayerDir(tmp, p.s.layerPath(key))
}

// ensureSmallBlob returns a config (or other small) blob, from the store or
// fetched, verified and stored.
func (p *puller) ensureSmallBlob(ctx context.Context, d v1.Descriptor) ([]byte, error) {
	if data, err := os.ReadFile(p.s.blobPath(d.Digest.String())); err == nil {
		return data, nil
	}
	if d.Size > maxManifestSize {
		return nil, fmt.Errorf("blob of %d bytes is too large", d.Size)
	}
	var data []byte
	err := p.tryEndpoints(ctx, capPull, "blob "+d.Digest.String(), func(_ int, cl *remote.Puller) error {
		rc, err := p.openBlob(ctx, cl, d.Digest)
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err = io.ReadAll(io.LimitReader(rc, maxManifestSize+1))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != d.Digest.String() {
			return fmt.Errorf("blob digest mismatch: got %s, want %s", got, d.Digest)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return data, p.s.writeBlob(d.Digest.String(), data)
}

func (p *puller) openBlob(ctx context.Context, cl *remote.Puller, d v1.Hash) (io.ReadCloser, error) {
	l, err := cl.Layer(ctx, p.repo.Digest(d.String()))
	if err != nil {
		return nil, err
	}
	return l.Compressed()
}

// ensureLayer makes layer i's unpacked directory exist. Layer blobs are not
// kept (as CRI-O's containers/storage does, and containerd with
// discard_unpacked_layers): the directory is the layer. A blob left by an
// older store whose directory is gone is unpacked from disk.
func (p *puller) ensureLayer(ctx context.Context, ps *progressSet, layers []layerRecord, i int) error {
	s, l := p.s, layers[i]
	if _, ok := p.layerDir(layers, i); ok {
		return nil
	}
	if l.TOCDigest != "" { // set with lazy pulls on only
		if mounted, err := p.lazyResult(ctx, layers, i); mounted || err != nil {
			return err
		}
	}
	lowers := p.lowersOf(layers, i)
	if f, err := os.Open(s.blobPath(l.Digest)); err == nil {
		defer f.Close()
		tmp, used, err := s.unpackLayer(ctx, io.TeeReader(f, countingWriter{ps}), l.DiffID, p.lim, lowers)
		if err != nil {
			if contextErr(ctx) != nil {
				return err
			}
			return fmt.Errorf("layer %s: %w", l.Digest, badLayer(err))
		}
		return p.commitLayer(tmp, used, layers, i)
	}
	return p.tryEndpoints(ctx, capPull, "layer "+l.Digest, func(_ int, cl *remote.Puller) error {
		return p.downloadLayer(ctx, ps, cl, layers, i, lowers)
	})
}

// downloadLayer downloads layer i from one endpoint and unpacks it as it
// comes. The directory is renamed into place only once the blob's size and
// digest are verified: go-containerregistry's blob reader hashes what it
// reads and fails at EOF on a wrong digest (internal/verify), sizedReader
// fails on a wrong size. An unpack error of a blob whose digest is right
// is the image's fault, not the endpoint's (imageFault).
func (p *puller) downloadLayer(ctx context.Context, ps *progressSet, cl *remote.Puller, layers []layerRecord, i int,
	lowers func(context.Context) ([]string, error)) error {
	s, l := p.s, layers[i]
	h, _ := v1.NewHash(l.Digest)
	rc, err := p.openBlob(ctx, cl, h)
	if err != nil {
		return err
	}
	defer rc.Close()
	r := io.TeeReader(&sizedReader{r: &ctxReader{ctx: ctx, r: rc}, left: l.Size, digest: l.Digest}, countingWriter{ps})
	tmp, used, err := s.unpackLayer(ctx, r, l.DiffID, p.lim, lowers)
	if err != nil {
		if contextErr(ctx) != nil {
			return err
		}
		// A corrupt blob shows up as a decompression or tar error; it is
		// the endpoint's if reading it to the end proves it corrupt.
		if _, cerr := io.Copy(io.Discard, r); cerr != nil && contextErr(ctx) == nil {
			return fmt.Errorf("corrupt blob: %w (%v)", cerr, err)
		}
		if contextErr(ctx) != nil {
			return err
		}
		return &imageFault{badLayer(err)}
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := p.commitLayer(tmp, used, layers, i); err != nil {
		return &imageFault{err}
	}
	return nil
}

// sizedReader fails a blob that is longer or shorter than the manifest says.
type sizedReader struct {
	r      io.Reader
	left   int64
	digest string
}

func (s *sizedReader) Read(b []byte) (int, error) {
	if int64(len(b)) > s.left { // one byte past the size shows a longer blob; no s.left+1: it may be MaxInt64
		b = b[:s.left+1]
	}
	n, err := s.r.Read(b)
	s.left -= int64(n)
	switch {
	case s.left < 0:
		return n, fmt.Errorf("blob %s: longer than the manifest's size", s.digest)
	case errors.Is(err, io.EOF) && s.left > 0:
		return n, fmt.Errorf("blob %s: %d bytes short of the manifest's size: %w", s.digest, s.left, io.ErrUnexpectedEOF)
	}
	return n, err
}

// imageFault is an error no other endpoint can mend: content that
// downloaded and verified fine does not unpack (or the store cannot keep
// it). tryEndpoints stops at it.
type imageFault struct{ err error }

func (e *imageFault) Error() string { return e.err.Error() }
func (e *imageFault) Unwrap() error { return e.err }

// blobTemp is a blob being written: a temp file and a running digest.
type blobTemp struct {
	s      *Store
	f      *os.File
	h      hash.Hash
	n      int64
	digest string
	size   int64
	done   bool
}

func (s *Store) newBlobTemp(digest string, size int64) (*blobTemp, error) {
	f, err := os.CreateTemp(s.tmpDir, strings.TrimPrefix(digest, "sha256:")[:12]+"-*")
	if err != nil {
		return nil, err
	}
	return &blobTemp{s: s, f: f, h: sha256.New(), digest: digest, size: size}, nil
}

func (b *blobTemp) Write(p []byte) (int, error) {
	b.h.Write(p)
	b.n += int64(len(p))
	return b.f.Write(p)
}

// verify checks size and digest of what was written.
func (b *blobTemp) verify() error {
	if b.size > 0 && b.n != b.size {
		return fmt.Errorf("blob %s: got %d bytes, want %d", b.digest, b.n, b.size)
	}
	if got := "sha256:" + hex.EncodeToString(b.h.Sum(nil)); got != b.digest {
		return fmt.Errorf("blob digest mismatch: got %s, want %s", got, b.digest)
	}
	return nil
}

// commit verifies size and digest, then renames the blob into place.
func (b *blobTemp) commit() error {
	if err := b.verify(); err != nil {
		return err
	}
	if err := b.f.Sync(); err != nil {
		return err
	}
	if err := b.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(b.f.Name(), b.s.blobPath(b.digest)); err != nil {
		return err
	}
	b.done = true
	return nil
}

func (b *blobTemp) discard() {
	if !b.done {
		_ = b.f.Close()
		_ = os.Remove(b.f.Name())
	}
}

// writeBlob stores data, already verified, under digest.
func (s *Store) writeBlob(digest string, data []byte) error {
	if exists(s.blobPath(digest)) {
		return nil
	}
	bt, err := s.newBlobTemp(digest, int64(len(data)))
	if err != nil {
		return err
	}
	defer bt.discard()
	if _, err := bt.Write(data); err != nil {
		return err
	}
	return bt.commit()
}

// ctxReader stops reading when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := contextErr(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func humanRate(bps float64) string {
	switch {
	case bps >= 1e6:
		return fmt.Sprintf("%.1f MB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.1f kB/s", bps/1e3)
	default:
		return fmt.Sprintf("%.0f B/s", bps)
	}
}

// hostError is an error whose message names the endpoint rather than the
// placeholder host go-containerregistry saw.
type hostError struct {
	err error
	msg string
}

func (e *hostError) Error() string { return e.msg }
func (e *hostError) Unwrap() error { return e.err }

// endpointError names the endpoint and sanitizes what the registry put in
// the message (error bodies reach pod events).
func endpointError(err error, ep endpoint) error {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "https://"+placeholderHost, ep.URL.Scheme+"://"+ep.URL.Host)
	msg = strings.ReplaceAll(msg, placeholderHost, ep.URL.Host)
	return &hostError{err: err, msg: sanitizeRemote(msg, maxRemoteText)}
}
