package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNRIDefaultsAndValidation(t *testing.T) {
	cfg := Default()
	if !cfg.NRI.Enable || cfg.NRI.SocketPath != "/var/run/nri/nri.sock" || cfg.Validate() != nil {
		t.Fatalf("NRI defaults: %+v (%v)", cfg.NRI, cfg.Validate())
	}
	if reg, req := cfg.NRI.Timeouts(); reg != 5*time.Second || req != 5*time.Second {
		t.Fatalf("timeouts %v %v", reg, req)
	}
	for name, mut := range map[string]func(*NRI){
		"relative socket":  func(n *NRI) { n.SocketPath = "nri.sock" },
		"relative plugins": func(n *NRI) { n.PluginPath = "plugins" },
		"bad timeout":      func(n *NRI) { n.RequestTimeout = "soon" },
		"zero timeout":     func(n *NRI) { n.RegistrationTimeout = "0s" },
	} {
		c := Default()
		mut(&c.NRI)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
		c.NRI.Enable = false
		if err := c.Validate(); err != nil {
			t.Errorf("%s with NRI disabled: %v", name, err)
		}
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte("[nri]\nenable = false\nsocket_path = \"/x/nri.sock\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, false)
	if err != nil || c.NRI.Enable || c.NRI.SocketPath != "/x/nri.sock" || c.NRI.PluginPath != "/opt/nri/plugins" {
		t.Fatalf("load [nri]: %+v %v", c.NRI, err)
	}
}

// The NRI default validator is on, refusing every kind of adjustment no
// CRI request could ask for; a config file turns single checks off.
func TestNRIDefaultValidator(t *testing.T) {
	v := Default().NRI.DefaultValidator
	if !v.Enable || !v.RejectOCIHookAdjustment || !v.RejectRuntimeDefaultSeccompAdjustment || !v.RejectUnconfinedSeccompAdjustment ||
		!v.RejectCustomSeccompAdjustment || !v.RejectNamespaceAdjustment || !v.RejectSysctlAdjustment ||
		!v.RejectHostMountAdjustment || !v.RejectDeviceAdjustment || len(v.RequiredPlugins) != 0 {
		t.Fatalf("default validator: %+v", v)
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	data := "[nri.default_validator]\nreject_host_mount_adjustment = false\nrequired_plugins = [\"topology\"]\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	v = c.NRI.DefaultValidator
	if v.RejectHostMountAdjustment || !v.RejectDeviceAdjustment || !v.RejectOCIHookAdjustment || len(v.RequiredPlugins) != 1 || c.Validate() != nil {
		t.Fatalf("loaded validator: %+v (%v)", v, c.Validate())
	}
	c.NRI.DefaultValidator.RequiredPlugins = []string{""}
	if c.Validate() == nil {
		t.Fatal("an empty required plugin name accepted")
	}
}
