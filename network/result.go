package network

import (
	"fmt"
	"net"
	"sort"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// resultIPs extracts the pod's addresses from a CNI result: addresses of
// the sandbox interface ifName (or with no interface given) first, IPv4
// before IPv6, without prefix length, de-duplicated.
func resultIPs(res types.Result, ifName string) ([]string, error) {
	if res == nil {
		return nil, fmt.Errorf("CNI returned no result")
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("convert CNI result: %w", err)
	}
	type cand struct {
		ip      net.IP
		sandbox bool
		order   int
	}
	var cands []cand
	for i, ipc := range r.IPs {
		if ipc == nil || ipc.Address.IP == nil {
			continue
		}
		sandbox := true
		if ipc.Interface != nil {
			idx := *ipc.Interface
			sandbox = idx >= 0 && idx < len(r.Interfaces) &&
				(r.Interfaces[idx].Sandbox != "" || r.Interfaces[idx].Name == ifName)
		}
		cands = append(cands, cand{ip: ipc.Address.IP, sandbox: sandbox, order: i})
	}
	sort.SliceStable(cands, func(a, b int) bool {
		ca, cb := cands[a], cands[b]
		if ca.sandbox != cb.sandbox {
			return ca.sandbox
		}
		return (ca.ip.To4() != nil) && (cb.ip.To4() == nil)
	})
	seen := map[string]bool{}
	var ips []string
	for _, c := range cands {
		s := c.ip.String()
		if !seen[s] {
			seen[s] = true
			ips = append(ips, s)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("CNI result has no IP address")
	}
	return ips, nil
}
