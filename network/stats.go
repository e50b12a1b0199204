package network

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// InterfaceStats are the counters of one network interface.
type InterfaceStats struct {
	Name                                 string
	RxBytes, RxErrors, TxBytes, TxErrors uint64
	RxPackets, RxDropped                 uint64
	TxPackets, TxDropped                 uint64
}

// PodInterfaceStats reads the interface counters of the network namespace
// that process pid is in (from /proc/<pid>/net/dev), loopback excluded.
func PodInterfaceStats(pid int) ([]InterfaceStats, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return nil, fmt.Errorf("read interface stats: %w", err)
	}
	defer f.Close()
	var out []InterfaceStats
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue // the two header lines
		}
		name = strings.TrimSpace(name)
		fields := strings.Fields(rest)
		if name == "lo" || len(fields) < 12 {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(fields[i], 10, 64); return v }
		out = append(out, InterfaceStats{
			Name: name, RxBytes: n(0), RxPackets: n(1), RxErrors: n(2), RxDropped: n(3),
			TxBytes: n(8), TxPackets: n(9), TxErrors: n(10), TxDropped: n(11),
		})
	}
	return out, sc.Err()
}
