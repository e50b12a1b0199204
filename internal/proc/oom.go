package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OwnOOMScoreAdj is this process's oom_score_adj.
func OwnOOMScoreAdj() (int, error) {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// refused reports the kernel's refusal of an oom_score_adj below the
// process's oom_score_adj_min without CAP_SYS_RESOURCE (EACCES; EPERM
// from some kernels and security modules).
func refused(err error) bool { return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) }

// SetOOMScoreAdj writes want to pid's oom_score_adj. Only where the kernel
// refuses it is the value clamped, never an error, like containerd's
// restrict_oom_score_adj: to this process's own, or the inherited one. It
// returns the value written.
func SetOOMScoreAdj(pid, want int) (int, error) {
	path := fmt.Sprintf("/proc/%d/oom_score_adj", pid)
	err := os.WriteFile(path, []byte(strconv.Itoa(want)), 0)
	if err == nil {
		return want, nil
	}
	if !refused(err) {
		return 0, fmt.Errorf("set oom_score_adj of %d: %w", pid, err)
	}
	if own, oerr := OwnOOMScoreAdj(); oerr == nil && own > want {
		if werr := os.WriteFile(path, []byte(strconv.Itoa(own)), 0); werr == nil {
			return own, nil
		}
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return 0, fmt.Errorf("set oom_score_adj of %d: %w", pid, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// OOMScoreAdjFloor is the lowest oom_score_adj this process may give its
// children: -1000 when the kernel lets it set that on itself (it then puts
// its own value back: raising is always allowed), else its own. Call it
// before starting children: they would inherit the probe.
func OOMScoreAdjFloor() int {
	own, err := OwnOOMScoreAdj()
	if err != nil {
		return -1000
	}
	const self = "/proc/self/oom_score_adj"
	if err := os.WriteFile(self, []byte("-1000"), 0); err != nil {
		return own
	}
	// Raising one's own score back never needs a privilege.
	_ = os.WriteFile(self, []byte(strconv.Itoa(own)), 0)
	return -1000
}
