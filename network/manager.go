package network

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

// ifName is the pod's interface name.
const ifName = "eth0"

// podCIDRFile, under DataDir, remembers the last pod CIDR given by
// SetPodCIDR across restarts (the kubelet does not send it again).
// A leading dot can never clash with a host-local network directory.
const podCIDRFile = ".pod-cidr"

// Manager sets up and tears down pod networks through libcni. It is safe
// for concurrent use; calls for the same pod ID are serialised.
type Manager struct {
	cfg   Config
	cni   *libcni.CNIConfig
	locks *keyLock
	table string // nftables table of the default network's masquerade rule

	mu          sync.Mutex
	subnet      string                    // current subnet of the default network
	defaultList *libcni.NetworkConfigList // built-in network for subnet
	// defaultNoPorts is defaultList without portmap, for pods without
	// port mappings: portmap has nothing to do for them, yet it costs a
	// plugin run and two iptables runs at ADD and at DEL. DEL uses the
	// list ADD used (libcni's cache), so the two always match.
	defaultNoPorts *libcni.NetworkConfigList
	masqFor        string // subnet the masquerade rule is installed for; "" = none
}

func logger() *slog.Logger {
	return slog.Default().With("component", "network")
}

// NewManager creates a Manager. When the built-in default network is in use
// (no config in ConfDir and DefaultNetwork set), it installs the
// masquerade rule for the default network's subnet.
func NewManager(cfg Config) (*Manager, error) {
	cfg.BinDirs = append([]string(nil), cfg.BinDirs...)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("create CNI cache dir: %w", err)
	}
	m := &Manager{
		cfg:   cfg,
		cni:   libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, newPluginExec(cfg.CacheDir)),
		locks: newKeyLock(),
		table: masqTableName(cfg.DefaultName),
	}
	reapOrphanPlugins(cfg.CacheDir)
	if !cfg.DefaultNetwork {
		return m, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create default network data dir: %w", err)
	}
	subnet := m.persistedPodCIDR()
	if subnet == "" {
		n, _ := parseIPv4Subnet(cfg.DefaultSubnet) // validated above
		subnet = n.String()
	}
	if err := m.switchDefaultSubnet(subnet, false); err != nil {
		return nil, err
	}
	list, _, err := loadFirstConfList(cfg.ConfDir)
	if err == nil && list == nil {
		if err := m.ensureMasquerade(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// newPluginExec returns the exec used for plugins (pluginExec), marked
// with the CNI cache dir as their owner. It must be given explicitly: with
// nil, libcni creates one lazily on first use without a lock, a data race
// between concurrent Setup calls.
func newPluginExec(owner string) invoke.Exec {
	return &pluginExec{stderr: os.Stderr, owner: owner}
}

// persistedPodCIDR returns the pod CIDR saved by an earlier SetPodCIDR, or "".
func (m *Manager) persistedPodCIDR() string {
	b, err := os.ReadFile(filepath.Join(m.cfg.DataDir, podCIDRFile))
	if err != nil {
		return ""
	}
	n, err := parseIPv4Subnet(strings.TrimSpace(string(b)))
	if err != nil {
		logger().Warn("ignoring unreadable saved pod CIDR", "file", filepath.Join(m.cfg.DataDir, podCIDRFile), "error", err)
		return ""
	}
	return n.String()
}

// defaultConfPath is where the built-in network's conflist is written for
// humans to inspect; it is never read back.
func (m *Manager) defaultConfPath() string {
	return filepath.Join(filepath.Dir(filepath.Clean(m.cfg.CacheDir)), "default.conflist")
}

// switchDefaultSubnet makes subnet the default network's subnet: it
// re-installs the masquerade rule if one is installed, then swaps the
// conflist. Must not be called with m.mu held.
func (m *Manager) switchDefaultSubnet(subnet string, persist bool) error {
	list, raw, err := defaultConfList(m.cfg.DefaultName, m.cfg.DefaultBridge, subnet, m.cfg.DataDir, true)
	if err != nil {
		return err
	}
	noPorts, _, err := defaultConfList(m.cfg.DefaultName, m.cfg.DefaultBridge, subnet, m.cfg.DataDir, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.masqFor != "" && m.masqFor != subnet {
		n, _ := parseIPv4Subnet(subnet)
		if err := installMasquerade(m.table, n); err != nil {
			return err
		}
		m.masqFor = subnet
	}
	if persist {
		if err := writeFileAtomic(filepath.Join(m.cfg.DataDir, podCIDRFile), []byte(subnet+"\n"), 0o600); err != nil {
			return fmt.Errorf("save pod CIDR: %w", err)
		}
	}
	m.subnet = subnet
	m.defaultList, m.defaultNoPorts = list, noPorts
	if err := writeFileAtomic(m.defaultConfPath(), raw, 0o644); err != nil {
		// Informational copy only.
		logger().Warn("cannot write default network config copy", "path", m.defaultConfPath(), "error", err)
	}
	return nil
}

// ensureMasquerade installs the masquerade rule for the current default
// subnet unless it is already installed.
func (m *Manager) ensureMasquerade() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.masqFor == m.subnet {
		return nil
	}
	n, err := parseIPv4Subnet(m.subnet)
	if err != nil {
		return err
	}
	if err := installMasquerade(m.table, n); err != nil {
		return err
	}
	m.masqFor = m.subnet
	logger().Info("masquerade rule installed", "table", "ip "+m.table, "subnet", m.subnet)
	return nil
}

// currentList returns the network to use for new pods: the first config in
// ConfDir, else the built-in network if enabled, else nil.
func (m *Manager) currentList() (list *libcni.NetworkConfigList, isDefault bool, err error) {
	list, file, err := loadFirstConfList(m.cfg.ConfDir)
	if err != nil {
		return nil, false, err
	}
	if list != nil {
		logger().Debug("using CNI config", "file", file, "network", list.Name)
		return list, false, nil
	}
	if !m.cfg.DefaultNetwork {
		return nil, false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.defaultList, true, nil
}

// forPod is the list that the ADD of a pod with runtime arguments rt runs:
// the built-in network without portmap when rt maps no host port, else
// list.
func (m *Manager) forPod(list *libcni.NetworkConfigList, isDefault bool, rt *libcni.RuntimeConf) *libcni.NetworkConfigList {
	if _, hostPorts := rt.CapabilityArgs["portMappings"]; !isDefault || hostPorts {
		return list
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.defaultNoPorts == nil || m.defaultList != list {
		return list // the subnet changed meanwhile: keep the list checked
	}
	return m.defaultNoPorts
}

// Ready returns nil when pods can be networked, or an error wrapping
// ErrNotReady that says why not.
func (m *Manager) Ready() error {
	_, _, err := m.readyList()
	return err
}

// readyList returns the list for new pods, or an error wrapping ErrNotReady.
func (m *Manager) readyList() (*libcni.NetworkConfigList, bool, error) {
	list, isDefault, err := m.currentList()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if list == nil {
		return nil, false, fmt.Errorf("%w: no CNI network config in %s and the default network is disabled", ErrNotReady, m.cfg.ConfDir)
	}
	plugins := requiredPlugins(list)
	if isDefault {
		plugins = defaultPlugins
	}
	if err := checkPlugins(list.Name, plugins, m.cfg.BinDirs); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return list, isDefault, nil
}

// SetPodCIDR sets the subnet of the built-in network from the kubelet's
// pod CIDR (comma-separated for dual stack; only the IPv4 entry is used).
// New pods get addresses in it; existing pods keep theirs. The masquerade
// rule is replaced for the new subnet. The CIDR is saved in DataDir and
// used again after a restart. An empty cidr is ignored.
func (m *Manager) SetPodCIDR(cidr string) error {
	cidr = strings.TrimSpace(cidr)
	if cidr == "" {
		return nil
	}
	var v4 string
	for _, c := range strings.Split(cidr, ",") {
		c = strings.TrimSpace(c)
		n, err := parseIPv4Subnet(c)
		if err != nil {
			if _, _, perr := net.ParseCIDR(c); perr == nil {
				logger().Warn("ignoring non-IPv4 pod CIDR; the default network is IPv4 only", "cidr", c)
				continue
			}
			return fmt.Errorf("pod CIDR %q: %w", cidr, err)
		}
		if v4 == "" {
			v4 = n.String()
		}
	}
	if v4 == "" {
		return fmt.Errorf("pod CIDR %q has no IPv4 subnet: %w", cidr, ErrInvalidConfig)
	}
	if !m.cfg.DefaultNetwork {
		logger().Info("pod CIDR ignored: the default network is disabled", "cidr", cidr)
		return nil
	}
	m.mu.Lock()
	same := m.subnet == v4
	m.mu.Unlock()
	if same {
		return nil
	}
	if err := m.switchDefaultSubnet(v4, true); err != nil {
		return fmt.Errorf("set pod CIDR %s: %w", v4, err)
	}
	logger().Info("default network subnet changed", "subnet", v4)
	return nil
}

// Close releases the Manager. With removeRules it also deletes the
// masquerade table (call it on a clean shutdown with no pods left).
// portmap's shared chains are never touched.
func (m *Manager) Close(removeRules bool) error {
	if !removeRules || m.cfg.DefaultName == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := removeMasquerade(m.table); err != nil {
		return fmt.Errorf("close network manager: %w", err)
	}
	m.masqFor = ""
	return nil
}
