package secprofile

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The artifact format (see docs/DESIGN.md, "Security profiles").
const (
	// ConfigType marks a seccomp profile: the config's media type, or the
	// artifactType of a manifest with the empty config.
	ConfigType = "application/vnd.cncf.seccomp-profile.config.v1+json"
	// EmptyConfigType is OCI's empty descriptor's media type.
	EmptyConfigType = "application/vnd.oci.empty.v1+json"
	// ManifestType is the only manifest media type taken (no index, no
	// Docker manifest).
	ManifestType = "application/vnd.oci.image.manifest.v1+json"
	// MaxManifest and MaxProfile bound the manifest and the profile (the
	// layer) in bytes.
	MaxManifest = 64 << 10
	MaxProfile  = 1 << 20
)

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	ArtifactType  string       `json:"artifactType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
	Manifests     []descriptor `json:"manifests"`
}

// chooseLayer checks a profile artifact's manifest and names its layer:
// an OCI image manifest (not an index), whose config media type is
// ConfigType, or whose artifactType is ConfigType with the empty config;
// exactly one layer, not an archive, at most MaxProfile bytes, by sha256.
func chooseLayer(mediaType string, data []byte) (string, int64, error) {
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return "", 0, invalidf("the manifest is not JSON: %.200v", err)
	}
	switch {
	case m.Manifests != nil || strings.Contains(mediaType, "index") || strings.Contains(mediaType, "manifest.list"):
		return "", 0, invalidf("an index is not a profile artifact (want one %s)", ManifestType)
	case mediaType != ManifestType || (m.MediaType != "" && m.MediaType != ManifestType):
		return "", 0, invalidf("manifest media type %.100q is not %s", mediaType, ManifestType)
	case m.SchemaVersion != 2:
		return "", 0, invalidf("manifest schemaVersion %d, want 2", m.SchemaVersion)
	}
	kind := m.Config.MediaType == ConfigType ||
		(m.ArtifactType == ConfigType && m.Config.MediaType == EmptyConfigType)
	if !kind {
		return "", 0, invalidf("not a seccomp profile: config %.100q, artifactType %.100q (want config %s, or artifactType %s with config %s)",
			m.Config.MediaType, m.ArtifactType, ConfigType, ConfigType, EmptyConfigType)
	}
	if len(m.Layers) != 1 {
		return "", 0, invalidf("a seccomp profile artifact has exactly one layer, this one %d", len(m.Layers))
	}
	l := m.Layers[0]
	for _, archive := range []string{"tar", "gzip", "zstd"} {
		if strings.Contains(l.MediaType, archive) {
			return "", 0, invalidf("the layer is an archive (%.100q), not the profile's JSON", l.MediaType)
		}
	}
	if l.Size < 0 || l.Size > MaxProfile {
		return "", 0, invalidf("a profile of %d bytes, at most %d", l.Size, MaxProfile)
	}
	if !isSHA256(l.Digest) {
		return "", 0, invalidf("layer digest %.100q is not sha256", l.Digest)
	}
	return l.Digest, l.Size, nil
}

func isSHA256(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
