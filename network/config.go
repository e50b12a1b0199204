package network

import (
	"fmt"
	"net"
	"regexp"
)

// Config configures a Manager.
type Config struct {
	ConfDir  string   // admin CNI configs, e.g. /etc/cni/net.d
	BinDirs  []string // plugin binaries, e.g. /opt/cni/bin
	CacheDir string   // private libcni cache dir
	DataDir  string   // private host-local dataDir for the default network

	DefaultNetwork bool   // use the built-in network when ConfDir holds no config
	DefaultName    string // CNI network name of the built-in network; unique per instance
	DefaultBridge  string // bridge of the built-in network, e.g. "minicri0"
	DefaultSubnet  string // IPv4 subnet of the built-in network until SetPodCIDR
}

// networkNameRE is libcni's rule for network names.
var networkNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

func (c *Config) validate() error {
	if c.CacheDir == "" {
		return fmt.Errorf("cache dir is empty: %w", ErrInvalidConfig)
	}
	if !c.DefaultNetwork {
		return nil
	}
	if c.DataDir == "" {
		return fmt.Errorf("default network: data dir is empty: %w", ErrInvalidConfig)
	}
	if !networkNameRE.MatchString(c.DefaultName) {
		return fmt.Errorf("default network name %q: %w", c.DefaultName, ErrInvalidConfig)
	}
	if c.DefaultBridge == "" || len(c.DefaultBridge) > 15 {
		return fmt.Errorf("default bridge name %q (1-15 chars): %w", c.DefaultBridge, ErrInvalidConfig)
	}
	if _, err := parseIPv4Subnet(c.DefaultSubnet); err != nil {
		return fmt.Errorf("default subnet: %w", err)
	}
	return nil
}

// parseIPv4Subnet parses an IPv4 CIDR and returns its network (host bits
// cleared).
func parseIPv4Subnet(s string) (*net.IPNet, error) {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", s, ErrInvalidConfig)
	}
	if n.IP.To4() == nil {
		return nil, fmt.Errorf("%q is not IPv4: %w", s, ErrInvalidConfig)
	}
	n.IP = n.IP.To4()
	return n, nil
}
