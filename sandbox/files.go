package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const defaultHosts = `127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

// File names of the pod's files in its root directory.
const (
	HostnameFile   = "hostname"
	HostsFile      = "hosts"
	ResolvConfFile = "resolv.conf"
)

// writePodFiles writes the pod's hostname, hosts and resolv.conf.
func writePodFiles(dir string, cfg Config) error {
	hostname := cfg.Hostname
	if hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("host name: %w", err)
		}
		hostname = h
	}
	hosts := []byte(defaultHosts)
	if cfg.Namespaces.Network == ModeNode {
		b, err := os.ReadFile("/etc/hosts")
		if err != nil {
			return fmt.Errorf("read host's /etc/hosts: %w", err)
		}
		hosts = b
	}
	resolv, err := resolvConf(cfg.DNS)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		HostnameFile:   []byte(hostname + "\n"),
		HostsFile:      hosts,
		ResolvConfFile: resolv,
	}
	for name, data := range files {
		// Bind-mounted into the pod's containers as /etc/hostname, /etc/hosts
		// and /etc/resolv.conf, which a non-root container user must read;
		// the pod directory holding them is 0700 on the host.
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil { //nolint:gosec // see above
			return fmt.Errorf("write pod %s: %w", name, err)
		}
	}
	return nil
}

// resolvConf renders the pod's DNS config, or copies the host's when the pod
// has none.
func resolvConf(dns *DNS) ([]byte, error) {
	if dns == nil || len(dns.Servers)+len(dns.Searches)+len(dns.Options) == 0 {
		b, err := os.ReadFile("/etc/resolv.conf")
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read host's resolv.conf: %w", err)
		}
		return b, nil
	}
	var b strings.Builder
	for _, s := range dns.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(dns.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(dns.Searches, " "))
	}
	if len(dns.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(dns.Options, " "))
	}
	return []byte(b.String()), nil
}
