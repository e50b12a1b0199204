package podarchive

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxManifest bounds pod.json (a pod config, a few IPs, names).
const maxManifest = 4 << 20

// readManifest reads dir/pod.json. The checkpoint path is the caller's:
// pod.json is looked at with O_PATH (no link followed, nothing opened) and
// read only if a regular file, at most maxManifest bytes; a FIFO (which
// blocked for ever), a device or a link is refused. Every failure before
// the read gives one message, whatever the path is (a missing path, a
// file, a directory without pod.json): no probe of the host's files.
func readManifest(dir string) ([]byte, error) {
	notCkpt := fmt.Errorf("%w: %s holds no pod checkpoint (a regular file %s)", ErrInvalid, dir, ManifestName)
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notCkpt
	}
	defer func() { _ = unix.Close(dfd) }()
	fd, err := unix.Openat(dfd, ManifestName, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notCkpt
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, notCkpt
	}
	if st.Size > maxManifest {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, ManifestName, maxManifest)
	}
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, ManifestName, err)
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, maxManifest))
}
