package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
)

// warnUntraversable logs when an ancestor of dir cannot be searched by other
// users: containers of pods with their own user namespace reach their rootfs
// under the state dir as an unprivileged host UID, and would fail to start.
func warnUntraversable(log *slog.Logger, dirs ...string) {
	for _, dir := range dirs {
		for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
			if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
				log.Warn("directory is not searchable by others; user-namespaced pods will fail to start",
					"dir", d, "mode", st.Mode().Perm().String(), "fix", "chmod o+x "+d)
			}
			if d == "/" {
				break
			}
		}
	}
}
