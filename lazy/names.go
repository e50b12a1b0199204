package lazy

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/stargz-snapshotter/estargz"
)

// rawEntry is what checkNames reads of a TOC entry: its names as the image's
// author wrote them (estargz cleans them in place, turning "../x" into "x").
type rawEntry struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	LinkName string `json:"linkName"`
}

// readRawTOC reads the names of the TOC's entries from its decompressed
// tar (one file, the TOC JSON), an entry at a time: only the names are kept.
func readRawTOC(r io.Reader) ([]rawEntry, error) {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("TOC tar: %w", err)
	}
	if h.Name != estargz.TOCTarName {
		return nil, fmt.Errorf("TOC tar entry %q, want %q", h.Name, estargz.TOCTarName)
	}
	dec := json.NewDecoder(tr)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var entries []rawEntry
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("TOC JSON: %w", err)
		}
		if key != "entries" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("TOC JSON: %q: %w", key, err)
			}
			continue
		}
		if entries, err = readEntries(dec); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// readEntries reads the TOC's array of entries, one at a time.
func readEntries(dec *json.Decoder) ([]rawEntry, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	var entries []rawEntry
	for dec.More() {
		var e rawEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("TOC JSON: entry %d: %w", len(entries), err)
		}
		entries = append(entries, e)
	}
	return entries, expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("TOC JSON: %w", err)
	}
	if tok != want {
		return fmt.Errorf("TOC JSON: %v where %v was expected", tok, want)
	}
	return nil
}

// checkNames refuses a TOC with a name a full pull would refuse or put
// elsewhere, or that the tree cannot hold: every entry's name (and a hard
// link's target) must be a plain relative path, its components neither
// empty, ".", "..", nor holding a NUL (a leading "./" and a directory's
// trailing "/" are allowed); only a directory may name the root ("./");
// a whiteout must name a file (not "", "." or ".."); a hard link must name
// an entry that is not a directory; no name may come twice. Such a layer
// wraps ErrBadName: it is pulled whole, where the unpacker decides.
func checkNames(entries []rawEntry) error {
	types := make(map[string]string, len(entries))
	for _, e := range entries {
		if e.Type == "chunk" {
			continue // named by the file before it, whatever it says
		}
		name, err := canonical(e.Name, e.Type == "dir")
		if err != nil {
			return fmt.Errorf("%w: entry %q: %w", ErrBadName, e.Name, err)
		}
		if _, dup := types[name]; dup {
			return fmt.Errorf("%w: entry %q: a second entry of that name", ErrBadName, e.Name)
		}
		types[name] = e.Type
		if err := checkWhiteout(name); err != nil {
			return fmt.Errorf("%w: entry %q: %w", ErrBadName, e.Name, err)
		}
	}
	for _, e := range entries {
		if e.Type != "hardlink" {
			continue
		}
		target, err := canonical(e.LinkName, false)
		if err == nil && target == "" {
			err = fmt.Errorf("the layer's root")
		}
		if err == nil && types[target] == "dir" {
			err = fmt.Errorf("a directory")
		}
		if err != nil {
			return fmt.Errorf("%w: hard link %q to %q: %w", ErrBadName, e.Name, e.LinkName, err)
		}
	}
	return nil
}

// canonical is name without its leading "./" and trailing "/" (the latter
// only for a directory), "" for the root (only a directory's), or why the
// name is refused.
func canonical(name string, dir bool) (string, error) {
	n := strings.TrimPrefix(name, "./")
	if dir {
		n = strings.TrimSuffix(n, "/")
	}
	if n == "" || n == "." {
		if !dir {
			return "", fmt.Errorf("names the layer's root, not as a directory")
		}
		return "", nil
	}
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("an absolute name")
	}
	for c := range strings.SplitSeq(n, "/") {
		switch {
		case c == "":
			return "", fmt.Errorf("an empty component")
		case c == "." || c == "..":
			return "", fmt.Errorf("a %q component", c)
		case strings.ContainsRune(c, 0):
			return "", fmt.Errorf("a NUL in a component")
		}
	}
	return n, nil
}

// checkWhiteout refuses a whiteout of no file: ".wh." alone, or of "." or "..".
func checkWhiteout(name string) error {
	base := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.HasPrefix(base, whiteoutPrefix) || base == opaqueMarker {
		return nil
	}
	switch strings.TrimPrefix(base, whiteoutPrefix) {
	case "", ".", "..":
		return fmt.Errorf("a whiteout of no file")
	}
	return nil
}
