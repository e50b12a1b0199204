package container

import (
	"errors"
	"fmt"
	"os"
)

// writeNewFile creates path (which must not exist: O_EXCL, no link is
// followed at the last component) with mode 0600 and writes data, without
// syncing: for files that matter only while the processes they describe live.
func writeNewFile(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", path, cerr)
		}
		if err != nil {
			err = errors.Join(err, os.Remove(path))
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
