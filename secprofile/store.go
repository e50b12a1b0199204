package secprofile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/atomicfile"
)

// Registry is the image store's registry access (image.Store).
type Registry interface {
	FetchSmallArtifact(ctx context.Context, ref string, auth *image.AuthConfig, maxManifest, maxBlob int64, choose image.ChooseBlob) (image.SmallArtifact, error)
}

// maxRefs bounds the refs (and manifest digests) one record keeps: the
// oldest go first.
const maxRefs = 256

// Info is one stored profile, as ListSecurityProfiles reports it.
type Info struct {
	Digest string   `json:"digest"`    // the profile's (the layer's) sha256
	Refs   []string `json:"refs"`      // image.image of every pull that resolved to it
	Size   uint64   `json:"size"`      // bytes in the store
	Pinned []string `json:"manifests"` // the manifest digests that resolved to it
}

// Store holds the pulled profiles under dir: profiles/<hex> (the layer's
// bytes) and records/<hex>.json (its Info), both written temp-then-rename;
// a profile is present once its record is.
type Store struct {
	dir string
	reg Registry
	log *slog.Logger

	mu      sync.Mutex
	records map[string]*Info // by digest
}

// Open opens (creating) the store at dir and drops what a crash left: temp
// files, profiles without a record, records without their profile.
func Open(dir string, reg Registry, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Store{dir: dir, reg: reg, log: log, records: map[string]*Info{}}
	for _, d := range []string{s.profileDir(), s.recordDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("security profile store: %w", err)
		}
		atomicfile.RemoveTemps(d)
	}
	if err := s.load(); err != nil {
		return nil, fmt.Errorf("security profile store %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) profileDir() string { return filepath.Join(s.dir, "profiles") }
func (s *Store) recordDir() string  { return filepath.Join(s.dir, "records") }

func (s *Store) profilePath(digest string) string {
	return filepath.Join(s.profileDir(), strings.TrimPrefix(digest, "sha256:"))
}

func (s *Store) recordPath(digest string) string {
	return filepath.Join(s.recordDir(), strings.TrimPrefix(digest, "sha256:")+".json")
}

func (s *Store) load() error {
	ents, err := os.ReadDir(s.recordDir())
	if err != nil {
		return err
	}
	for _, e := range ents {
		hexd, ok := strings.CutSuffix(e.Name(), ".json")
		path := filepath.Join(s.recordDir(), e.Name())
		var rec Info
		if ok {
			err = atomicfile.ReadJSON(path, &rec)
		}
		switch {
		case !ok || err != nil || rec.Digest != "sha256:"+hexd || !isSHA256(rec.Digest):
			s.log.Warn("security profile store: dropping a bad record", "file", e.Name(), "err", err)
		case !exists(s.profilePath(rec.Digest)):
			s.log.Warn("security profile store: dropping a record without its profile", "digest", rec.Digest)
		default:
			s.records[rec.Digest] = &rec
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	ents, err = os.ReadDir(s.profileDir())
	if err != nil {
		return err
	}
	for _, e := range ents {
		if s.records["sha256:"+e.Name()] == nil {
			if err := os.RemoveAll(filepath.Join(s.profileDir(), e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// List returns the stored profiles.
func (s *Store) List() []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Info, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, Info{Digest: r.Digest, Refs: slices.Clone(r.Refs), Size: r.Size, Pinned: slices.Clone(r.Pinned)})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Digest, b.Digest) })
	return out
}

// Remove forgets the profile digest names; an unknown digest is no error.
// Containers keep the filter they were created with.
func (s *Store) Remove(digest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records[digest] == nil {
		return nil
	}
	// The record first: a crash between the two leaves a profile without
	// a record, which Open drops.
	if err := os.Remove(s.recordPath(digest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove security profile %s: %w", digest, err)
	}
	delete(s.records, digest)
	if err := os.Remove(s.profilePath(digest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove security profile %s: %w", digest, err)
	}
	if err := atomicfile.SyncDir(s.recordDir()); err != nil {
		return fmt.Errorf("remove security profile %s: %w", digest, err)
	}
	s.log.Info("removed security profile", "digest", digest)
	return nil
}

// put stores a validated profile and its record (merged with the one of
// an earlier pull of the same profile); called with s.mu held.
func (s *Store) put(digest string, data []byte, ref, manifest string) error {
	if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		return fmt.Errorf("security profile %s: content does not match its digest", digest)
	}
	rec := s.records[digest]
	if rec == nil || !exists(s.profilePath(digest)) {
		if err := atomicfile.Write(s.profilePath(digest), data, 0o600); err != nil {
			return fmt.Errorf("store security profile %s: %w", digest, err)
		}
	}
	next := &Info{Digest: digest, Size: uint64(len(data))}
	if rec != nil {
		next.Refs, next.Pinned = slices.Clone(rec.Refs), slices.Clone(rec.Pinned)
	}
	next.Refs, next.Pinned = addBounded(next.Refs, ref), addBounded(next.Pinned, manifest)
	if err := s.writeRecord(next); err != nil {
		if rec == nil {
			_ = os.Remove(s.profilePath(digest)) // nothing half-stored
		}
		return err
	}
	return nil
}

func (s *Store) writeRecord(rec *Info) error {
	if err := atomicfile.WriteJSON(s.recordPath(rec.Digest), rec); err != nil {
		return fmt.Errorf("record security profile %s: %w", rec.Digest, err)
	}
	s.records[rec.Digest] = rec
	return nil
}

func addBounded(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	list = append(list, v)
	if len(list) > maxRefs {
		list = list[len(list)-maxRefs:]
	}
	return list
}
