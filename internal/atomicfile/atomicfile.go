// Package atomicfile writes files so that readers see either the old or the
// new content, never a partial one, also across a crash.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temp file in the same directory is
// written, synced and renamed over path, then the directory is synced.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			// The write already failed and says so; a temp left behind is
			// removed by RemoveTemps at the next start.
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("atomic write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	ok = true
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("atomic write %s: sync dir: %w", path, err)
	}
	return nil
}

// SyncDir makes a directory's entries (a rename, a new file) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteJSON marshals v and writes it atomically with mode 0600.
func WriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshal %s: %w", path, err)
	}
	return Write(path, data, 0o600)
}

// ReadJSON reads and unmarshals path into v.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// RemoveTemps deletes temp files a crash may have left in dir.
func RemoveTemps(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, m := range matches {
		if err := os.Remove(m); err != nil && !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("cannot remove leftover temp file", "path", m, "err", err)
		}
	}
}

// ScanRecords reads the record file named file in every directory under
// dir: good is called with each record whose ID (idOf) matches its
// directory, bad with each directory without such a record. It returns the
// IDs of the good ones.
func ScanRecords[R any](dir, file string, idOf func(*R) string, good func(id string, rec *R), bad func(id string, err error)) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, e := range entries {
		id := e.Name()
		var rec R
		err := ReadJSON(filepath.Join(dir, id, file), &rec)
		if err == nil && idOf(&rec) != id {
			err = fmt.Errorf("record of %s names %q", id, idOf(&rec))
		}
		if err != nil {
			bad(id, err)
			continue
		}
		known[id] = true
		good(id, &rec)
	}
	return known, nil
}
