// Package podarchive is the layout of a pod checkpoint (CRI CheckpointPod,
// RestorePod): a directory holding pod.json, the manifest written here,
// and one KEP-2008 container checkpoint archive per container (written by
// package checkpoint). The manifest records the pod's config and network
// state and which archive holds which container.
//
// Imports: the standard library, x/sys/unix and minicri's internal/
// helpers. It must never import a domain package (checkpoint, container,
// sandbox, ...), server, daemon or gRPC.
package podarchive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minicri/minicri/internal/atomicfile"
)

// Format is the version of the layout this minicri writes and restores.
const Format = 1

// ManifestName is the manifest's file name in a checkpoint directory.
const ManifestName = "pod.json"

// Errors of a bad checkpoint.
var (
	ErrInvalid            = errors.New("invalid pod checkpoint")
	ErrFailedPrecondition = errors.New("pod checkpoint not restorable")
)

// Manifest is pod.json.
type Manifest struct {
	Format         int         `json:"minicriPodCheckpointFormat"`
	Runtime        string      `json:"runtime"`
	PodID          string      `json:"podId"`
	RuntimeHandler string      `json:"runtimeHandler,omitempty"`
	Pod            any         `json:"pod"`           // the pod's config as minicri recorded it
	IPs            []string    `json:"ips,omitempty"` // the pod's IPs when checkpointed
	CheckpointedAt time.Time   `json:"checkpointedAt"`
	Containers     []Container `json:"containers"`
}

// Container is one container of the checkpoint.
type Container struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Archive string `json:"archive"` // file name in the checkpoint directory
}

// Runtime identifies the writer.
const Runtime = "minicri"

// CheckOutput checks a CheckpointPod output directory: absolute, an
// existing directory (not a link), empty.
func CheckOutput(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%w: output_path %q is not absolute", ErrInvalid, dir)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: output_path %q is not an existing directory", ErrInvalid, dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: output_path %q: %v", ErrInvalid, dir, err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: output_path %q is not empty", ErrInvalid, dir)
	}
	return nil
}

// Write writes the manifest into dir.
func Write(dir string, m Manifest) error {
	m.Format, m.Runtime = Format, Runtime
	return atomicfile.WriteJSON(filepath.Join(dir, ManifestName), m)
}

// Read reads and checks the manifest of the checkpoint in dir: the format
// this minicri writes, every archive a plain file name present in dir.
func Read(dir string) (*Manifest, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: checkpoint_path %q is not absolute", ErrInvalid, dir)
	}
	data, err := readManifest(dir) // open.go
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		// json's message would quote the file's first bytes.
		return nil, fmt.Errorf("%w: %s is not a pod checkpoint manifest (JSON)", ErrInvalid, ManifestName)
	}
	if m.Runtime != Runtime || m.Format != Format {
		return nil, fmt.Errorf("%w: checkpoint written by %q format %d; this minicri restores %q format %d",
			ErrFailedPrecondition, m.Runtime, m.Format, Runtime, Format)
	}
	if len(m.Containers) == 0 {
		return nil, fmt.Errorf("%w: the checkpoint holds no container", ErrInvalid)
	}
	for _, c := range m.Containers {
		if c.Archive != filepath.Base(c.Archive) || !filepath.IsLocal(c.Archive) {
			return nil, fmt.Errorf("%w: archive name %q", ErrInvalid, c.Archive)
		}
		if fi, err := os.Lstat(filepath.Join(dir, c.Archive)); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: archive %s of container %q missing", ErrInvalid, c.Archive, c.Name)
		}
	}
	return &m, nil
}

// Archive is the path of container name's archive, "" if it has none.
func (m *Manifest) Archive(dir, name string) string {
	for _, c := range m.Containers {
		if c.Name == name {
			return filepath.Join(dir, c.Archive)
		}
	}
	return ""
}
