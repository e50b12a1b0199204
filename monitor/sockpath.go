package monitor

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// viaDirFD calls fn with a short name for the socket path sock: unix socket
// paths are limited to 108 bytes, and a pod's state dir can be longer, so the
// socket is reached through an O_PATH descriptor of its directory
// (/proc/self/fd/N/name).
func viaDirFD(sock string, fn func(short string) error) error {
	fd, err := unix.Open(filepath.Dir(sock), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open socket dir: %w", &os.PathError{Op: "open", Path: filepath.Dir(sock), Err: err})
	}
	defer unix.Close(fd)
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(sock)))
}
