// Package config holds minicri's configuration: built-in defaults, the TOML
// file, and command-line overrides, applied in that order.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where the config file is read from when --config is not given.
const DefaultPath = "/etc/minicri/config.toml"

// Config is the effective configuration of one minicri instance.
type Config struct {
	Listen       string `toml:"listen"`
	Root         string `toml:"root"`
	State        string `toml:"state"`
	LogLevel     string `toml:"log_level"`
	PausePath    string `toml:"pause_path"`
	CgroupParent string `toml:"cgroup_parent"`
	// CgroupDriver is auto (systemd when systemd is PID 1), systemd or
	// cgroupfs.
	CgroupDriver string `toml:"cgroup_driver"`

	Network  Network  `toml:"network"`
	Registry Registry `toml:"registry"`
	Image    Image    `toml:"image"`
	Stream   Stream   `toml:"stream"`
	CDI      CDI      `toml:"cdi"`
	NRI      NRI      `toml:"nri"`
	Metrics  Metrics  `toml:"metrics"`
	Tracing  Tracing  `toml:"tracing"`
	// Runtimes are the RuntimeClass handlers besides the built-in "".
	Runtimes map[string]Runtime `toml:"runtimes,omitempty"`
}

// CDI configures Container Device Interface devices.
type CDI struct {
	// Enable resolves CDI devices (the CRI's cdi_devices, cdi.k8s.io/
	// container annotations); off, a container asking for one fails.
	Enable bool `toml:"enable"`
	// SpecDirs are read in order; a later directory wins a conflict.
	SpecDirs []string `toml:"spec_dirs"`
}

// NRI configures the Node Resource Interface (plugins that watch and adjust
// pods and containers).
type NRI struct {
	Enable bool `toml:"enable"`
	// SocketPath is where external plugins connect.
	SocketPath string `toml:"socket_path"`
	// PluginPath holds plugins minicri starts itself; PluginConfigPath
	// their configuration.
	PluginPath       string `toml:"plugin_path"`
	PluginConfigPath string `toml:"plugin_config_path"`
	// RegistrationTimeout bounds a plugin's registration; RequestTimeout
	// one event or its synchronization with existing pods and containers.
	RegistrationTimeout string `toml:"plugin_registration_timeout"`
	RequestTimeout      string `toml:"plugin_request_timeout"`
	// DefaultValidator refuses plugins' adjustments no CRI request could
	// ask for (on by default; validation plugins on the socket take part
	// besides it).
	DefaultValidator NRIValidator `toml:"default_validator"`
}

// NRIValidator configures NRI's default validator (its keys are
// containerd's) and minicri's checks beside it (host mounts, devices). A
// refused adjustment fails CreateContainer with PermissionDenied.
type NRIValidator struct {
	Enable                                bool `toml:"enable"`
	RejectOCIHookAdjustment               bool `toml:"reject_oci_hook_adjustment"`
	RejectRuntimeDefaultSeccompAdjustment bool `toml:"reject_runtime_default_seccomp_adjustment"`
	RejectUnconfinedSeccompAdjustment     bool `toml:"reject_unconfined_seccomp_adjustment"`
	RejectCustomSeccompAdjustment         bool `toml:"reject_custom_seccomp_adjustment"`
	RejectNamespaceAdjustment             bool `toml:"reject_namespace_adjustment"`
	RejectSysctlAdjustment                bool `toml:"reject_sysctl_adjustment"`
	// RejectHostMountAdjustment refuses every mount a plugin adds but a
	// tmpfs (binds of host paths, kernel filesystems).
	RejectHostMountAdjustment bool `toml:"reject_host_mount_adjustment"`
	// RejectDeviceAdjustment refuses device nodes, allowing device cgroup
	// rules (in updates too) and host network devices; CDI devices stay
	// allowed.
	RejectDeviceAdjustment bool `toml:"reject_device_adjustment"`
	// RequiredPlugins must be connected for any container to be created
	// (a pod may require more with NRI's required-plugins annotation).
	RequiredPlugins []string `toml:"required_plugins"`
	// TolerateMissingPluginsAnnotation, when set, is an annotation by which
	// a pod tolerates missing required plugins.
	TolerateMissingPluginsAnnotation string `toml:"tolerate_missing_plugins_annotation"`
}

// Network configures pod networking.
type Network struct {
	ConfDir        string   `toml:"conf_dir"`
	BinDirs        []string `toml:"bin_dirs"`
	DefaultNetwork bool     `toml:"default_network"`
	DefaultName    string   `toml:"default_name"`
	DefaultBridge  string   `toml:"default_bridge"`
	DefaultSubnet  string   `toml:"default_subnet"`
}

// Registry configures image pulls.
type Registry struct {
	ConfigPath        string `toml:"config_path"`
	NoProgressTimeout string `toml:"no_progress_timeout"`
	// MaxLayerSize bounds what one layer may unpack to, in bytes as the
	// disk takes them, each entry at least 4 KiB (0: the default, 32 GiB;
	// negative: no limit).
	MaxLayerSize int64 `toml:"max_layer_size"`
	// MaxImageSize bounds the same for all the layers of one pull
	// (0: the default, 64 GiB; negative: no limit).
	MaxImageSize int64 `toml:"max_image_size"`
	// MaxLayerRatio bounds what the layers of a pull may unpack to beyond
	// 1 GiB, as a multiple of their compressed size (0: the default, 100;
	// negative: none).
	MaxLayerRatio int `toml:"max_layer_ratio"`
	// MaxLayers bounds the layers of an image (0: the default, 500,
	// overlayfs's limit; negative: none).
	MaxLayers int `toml:"max_layers"`
	// MaxEntries bounds the files, directories and links (inodes) the
	// layers of a pull may create (0: the default, 1Mi; negative: none).
	MaxEntries int64 `toml:"max_entries"`
}

// Image configures how pulled images are held.
type Image struct {
	// Lazy mounts the layers of eStargz images (those whose descriptors
	// name a TOC digest) through minicri-lazyfs instead of unpacking them:
	// a container starts once their prioritized files are fetched, the rest
	// arrives in the background. A layer that cannot be read so is pulled
	// whole, as with Lazy off.
	Lazy bool `toml:"lazy"`
}

// Stream configures the streaming server (Exec, Attach, PortForward URLs).
type Stream struct {
	Address     string `toml:"address"`      // IP to listen on
	Port        string `toml:"port"`         // "0": a free port
	TLSCert     string `toml:"tls_cert"`     // PEM certificate; serve HTTPS when set (with tls_key)
	TLSKey      string `toml:"tls_key"`      // PEM private key
	IdleTimeout string `toml:"idle_timeout"` // a session idle this long is closed
}

// Default returns the configuration that works on a fresh machine.
func Default() Config {
	return Config{
		Listen:       "unix:///run/minicri/minicri.sock",
		Root:         "/var/lib/minicri",
		State:        "/run/minicri",
		LogLevel:     "info",
		CgroupParent: "/minicri",
		CgroupDriver: "auto",
		Network: Network{
			ConfDir:        "/etc/cni/net.d",
			BinDirs:        []string{"/opt/cni/bin"},
			DefaultNetwork: true,
			DefaultName:    "minicri",
			DefaultBridge:  "minicri0",
			DefaultSubnet:  "10.85.0.0/16",
		},
		Registry: Registry{
			ConfigPath:        "/etc/minicri/certs.d",
			NoProgressTimeout: "5m",
		},
		Stream: Stream{
			Address:     "127.0.0.1",
			Port:        "0",
			IdleTimeout: "4h",
		},
		CDI: CDI{Enable: true, SpecDirs: []string{"/etc/cdi", "/var/run/cdi"}},
		NRI: NRI{
			Enable:              true,
			SocketPath:          "/var/run/nri/nri.sock",
			PluginPath:          "/opt/nri/plugins",
			PluginConfigPath:    "/etc/nri/conf.d",
			RegistrationTimeout: "5s",
			RequestTimeout:      "5s",
			DefaultValidator: NRIValidator{
				Enable:                                true,
				RejectOCIHookAdjustment:               true,
				RejectRuntimeDefaultSeccompAdjustment: true,
				RejectUnconfinedSeccompAdjustment:     true,
				RejectCustomSeccompAdjustment:         true,
				RejectNamespaceAdjustment:             true,
				RejectSysctlAdjustment:                true,
				RejectHostMountAdjustment:             true,
				RejectDeviceAdjustment:                true,
				RequiredPlugins:                       []string{},
			},
		},
		Tracing: Tracing{SamplingRate: 1, ServiceName: "minicri"},
	}
}

// Load reads the file at path over the defaults. A missing file is not an
// error when allowMissing is set (the default path may be absent).
func Load(path string, allowMissing bool) (Config, error) {
	cfg := Default()
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && allowMissing {
			return cfg, nil
		}
		return cfg, fmt.Errorf("read config %s: %w", path, err)
	}
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return cfg, fmt.Errorf("parse config %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return cfg, fmt.Errorf("config %s: unknown keys: %s", path, strings.Join(keys, ", "))
	}
	return cfg, nil
}

// Validate checks the values that later code relies on.
func (c Config) Validate() error {
	if _, err := c.SocketPath(); err != nil {
		return err
	}
	for name, dir := range map[string]string{"root": c.Root, "state": c.State} {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("config: %s must be an absolute path, got %q", name, dir)
		}
	}
	if c.CgroupParent != "" && !strings.HasPrefix(c.CgroupParent, "/") && !strings.HasSuffix(c.CgroupParent, ".slice") {
		return fmt.Errorf("config: cgroup_parent must be an absolute path or a systemd slice, got %q", c.CgroupParent)
	}
	switch c.CgroupDriver {
	case "", "auto", "systemd", "cgroupfs":
	default:
		return fmt.Errorf("config: cgroup_driver must be auto, systemd or cgroupfs, got %q", c.CgroupDriver)
	}
	for _, d := range c.CDI.SpecDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("config: cdi.spec_dirs must be absolute paths, got %q", d)
		}
	}
	if err := c.NRI.validate(); err != nil {
		return err
	}
	if err := c.validateRuntimes(); err != nil {
		return err
	}
	if err := c.validateTelemetry(); err != nil {
		return err
	}
	return c.Stream.validate()
}

func (n NRI) validate() error {
	if !n.Enable {
		return nil
	}
	for name, p := range map[string]string{"socket_path": n.SocketPath, "plugin_path": n.PluginPath, "plugin_config_path": n.PluginConfigPath} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("config: nri.%s must be an absolute path, got %q", name, p)
		}
	}
	for name, v := range map[string]string{"plugin_registration_timeout": n.RegistrationTimeout, "plugin_request_timeout": n.RequestTimeout} {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("config: nri.%s must be a positive duration, got %q", name, v)
		}
	}
	for _, p := range n.DefaultValidator.RequiredPlugins {
		if p == "" || strings.ContainsAny(p, " \t\n") {
			return fmt.Errorf("config: nri.default_validator.required_plugins: %q is not a plugin name", p)
		}
	}
	return nil
}

// Timeouts are the parsed NRI timeouts (valid after Validate).
func (n NRI) Timeouts() (registration, request time.Duration) {
	registration, _ = time.ParseDuration(n.RegistrationTimeout)
	request, _ = time.ParseDuration(n.RequestTimeout)
	return registration, request
}

func (s Stream) validate() error {
	if net.ParseIP(s.Address) == nil {
		return fmt.Errorf("config: stream.address must be an IP address, got %q", s.Address)
	}
	if _, err := strconv.ParseUint(s.Port, 10, 16); err != nil {
		return fmt.Errorf("config: stream.port must be a port number (0: any free port), got %q", s.Port)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return errors.New("config: stream.tls_cert and stream.tls_key go together")
	}
	if d, err := time.ParseDuration(s.IdleTimeout); err != nil || d <= 0 {
		return fmt.Errorf("config: stream.idle_timeout must be a positive duration, got %q", s.IdleTimeout)
	}
	return nil
}

// StreamIdleTimeout is the parsed stream.idle_timeout (valid after Validate).
func (c Config) StreamIdleTimeout() time.Duration {
	d, _ := time.ParseDuration(c.Stream.IdleTimeout)
	return d
}

// SocketPath returns the filesystem path of the unix listen address.
func (c Config) SocketPath() (string, error) {
	p, ok := strings.CutPrefix(c.Listen, "unix://")
	if !ok || !filepath.IsAbs(p) {
		return "", fmt.Errorf("config: listen must be unix:///absolute/path, got %q", c.Listen)
	}
	return p, nil
}

// Write prints the configuration as TOML.
func (c Config) Write(w io.Writer) error {
	return toml.NewEncoder(w).Encode(c)
}
