package network

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/minicri/minicri/internal/atomicfile"
)

// writeFileAtomic writes data to path (creating its directory) so that
// readers see either the old or the new content.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create dir %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, data, perm)
}
