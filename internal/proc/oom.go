package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// OwnOOMScoreAdj is the lowest oom_score_adj this process may give others
// without CAP_SYS_RESOURCE: its own.
func OwnOOMScoreAdj() (int, error) {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// SetOOMScoreAdj writes want to pid's oom_score_adj. A value below what this
// process may set (root without CAP_SYS_RESOURCE cannot go below its own) is
// clamped, never an error, like containerd's restrict_oom_score_adj. It
// returns the value written.
func SetOOMScoreAdj(pid, want int) (int, error) {
	if own, err := OwnOOMScoreAdj(); err == nil && want < own {
		want = own
	}
	path := fmt.Sprintf("/proc/%d/oom_score_adj", pid)
	err := os.WriteFile(path, []byte(strconv.Itoa(want)), 0)
	if err != nil && os.IsPermission(err) {
		// The kernel refuses values below oom_score_adj_min without
		// CAP_SYS_RESOURCE; keep the inherited value.
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return 0, fmt.Errorf("set oom_score_adj of %d: %w", pid, err)
		}
		return strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if err != nil {
		return 0, fmt.Errorf("set oom_score_adj of %d: %w", pid, err)
	}
	return want, nil
}
